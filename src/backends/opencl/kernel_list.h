/* The OpenCL backend's kernel files: one CLG_KERNELS(family) line per file defining
 * clg_opencl_kernels_<family> (no include guard: included with CLG_KERNELS defined). */
CLG_KERNELS(relu)
CLG_KERNELS(activation)
CLG_KERNELS(binary_tf)
CLG_KERNELS(array_tf)
CLG_KERNELS(depthwise)
CLG_KERNELS(resize)
CLG_KERNELS(strided_slice)
