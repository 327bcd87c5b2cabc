/* The host backend's kernel files: one CLG_KERNELS(family) line per file defining
 * clg_host_kernels_<family> (no include guard: included with CLG_KERNELS defined). */
CLG_KERNELS(relu)
CLG_KERNELS(add_n)
CLG_KERNELS(binary)
CLG_KERNELS(math)
CLG_KERNELS(relu_grad)
CLG_KERNELS(select)
CLG_KERNELS(cast)
CLG_KERNELS(fill)
CLG_KERNELS(assign)
CLG_KERNELS(variable)
