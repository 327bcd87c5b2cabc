/* One process-wide lock around every CLBlast call (defined in cl_matmul.c, in builds with
 * CLBlast). CLBlast 1.5 fills its kernel database and program caches on first use without
 * a lock (CLBlast issue #486, fixed in 1.6.1), while distinct sessions may run MatMuls from
 * several threads at once. */
#ifndef CLG_KERNELS_CLBLAST_LOCK_H
#define CLG_KERNELS_CLBLAST_LOCK_H

void clg_clblast_lock(void);
void clg_clblast_unlock(void);

#endif
