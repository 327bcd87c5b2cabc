/* The host backend's kernel files: one CLG_KERNELS(family) line per file defining
 * clg_host_kernels_<family> (no include guard: included with CLG_KERNELS defined). */
CLG_KERNELS(relu)
CLG_KERNELS(matmul)
CLG_KERNELS(reduce)
CLG_KERNELS(shape_ops)
CLG_KERNELS(softmax)
CLG_KERNELS(nn)
CLG_KERNELS(nn_grad)
CLG_KERNELS(conv2d)
CLG_KERNELS(conv2d_grad)
