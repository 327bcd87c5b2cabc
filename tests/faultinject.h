/* Test-only fault injection for OpenCL and CLBlast calls.
 *
 * tests/faultinject.c defines the cl* and CLBlast* functions clgraph calls. A test
 * executable that links it (test_faults: see the block at the end of tests/CMakeLists.txt)
 * gets these definitions instead of the ICD loader's and CLBlast's: each one counts the
 * call and either fails it (when armed for this call and count) or forwards it to the real
 * function found with dlsym(RTLD_NEXT). Only calls made from the test executable itself
 * (which holds libclgraph.a) are counted and failed; calls that CLBlast or the ICD loader
 * make internally pass straight through, so a fault is always one clgraph has to handle.
 *
 *   clg_fault_reset();
 *   run_scenario();                                   // counts only
 *   long n = clg_fault_count("clCreateBuffer");
 *   for (long i = 1; i <= n; i++) {
 *     clg_fault_arm("clCreateBuffer", i, CL_MEM_OBJECT_ALLOCATION_FAILURE);
 *     run_scenario();                                 // the i-th clCreateBuffer fails
 *     bool fired = clg_fault_fired();
 *     clg_fault_disarm();
 *   }
 */
#ifndef CLG_FAULTINJECT_H
#define CLG_FAULTINJECT_H

#include <stdbool.h>

/* Zeroes every count and disarms. */
void clg_fault_reset(void);
/* From now on, the nth call (1 = the next one) of `call` fails with `error` (a cl_int, or a
 * CLBlastStatusCode for CLBlast functions); other calls forward. Counts restart at zero. */
void clg_fault_arm(const char *call, long nth, int error);
/* No call fails any more, and counting stops (until the next reset or arm), so that the
 * counts describe the attempt that ran armed. */
void clg_fault_disarm(void);
/* Whether the armed failure happened. */
bool clg_fault_fired(void);
/* Calls of `call` made by clgraph since the last reset or arm. */
long clg_fault_count(const char *call);
/* The names of the interposed functions: names[0 .. *count - 1]. */
const char *const *clg_fault_calls(int *count);

#endif
