/* The plan cache: plans kept per run signature (feeds, fetches, sorted targets), so that a
 * repeated signature is planned once. */
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

static bool same_ints(const int *a, const int *b, int n)
{
  return n == 0 || memcmp(a, b, sizeof(int) * (size_t)n) == 0;
}

static plan *plan_find(clg_executor *x, int nfeeds, const int *feeds, int nfetches,
                       const int *fetches, int ntargets, const int *targets)
{
  for (plan *p = x->plans; p; p = p->next)
    if (p->nfeeds == nfeeds && p->nfetches == nfetches && p->ntargets == ntargets &&
        same_ints(p->feeds, feeds, nfeeds) && same_ints(p->fetches, fetches, nfetches) &&
        same_ints(p->targets, targets, ntargets))
      return p;
  return NULL;
}

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

clg_code clg_plan_cache_get(clg_executor *x, int nfeeds, const clg_output *feeds_at, int nfetches,
                            const clg_output *fetches, int ntargets, clg_node *const *targets,
                            plan **out)
{
  int stack[3][16];
  int *fv = nfeeds <= 16 ? stack[0] : malloc(sizeof(int) * (size_t)nfeeds);
  int *tv = nfetches <= 16 ? stack[1] : malloc(sizeof(int) * (size_t)nfetches);
  int *gv = ntargets <= 16 ? stack[2] : malloc(sizeof(int) * (size_t)ntargets);
  clg_code code = CLG_OK;
  if (!fv || !tv || !gv) {
    code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
    goto done;
  }
  for (int i = 0; i < nfeeds; i++)
    fv[i] = x->base[feeds_at[i].node->index] + feeds_at[i].index;
  for (int i = 0; i < nfetches; i++)
    tv[i] = x->base[fetches[i].node->index] + fetches[i].index;
  for (int i = 0; i < ntargets; i++)
    gv[i] = targets[i]->index;
  qsort(gv, (size_t)ntargets, sizeof(int), cmp_int);
  plan *p = plan_find(x, nfeeds, fv, nfetches, tv, ntargets, gv);
  if (!p) {
    p = calloc(1, sizeof *p);
    if (p) {
      p->nfeeds = nfeeds;
      p->nfetches = nfetches;
      p->ntargets = ntargets;
      p->feeds = malloc(sizeof(int) * (size_t)(nfeeds + 1));
      p->fetches = malloc(sizeof(int) * (size_t)(nfetches + 1));
      p->targets = malloc(sizeof(int) * (size_t)(ntargets + 1));
    }
    if (!p || !p->feeds || !p->fetches || !p->targets) {
      clg_plan_free(p);
      code = clg_error(CLG_RESOURCE_EXHAUSTED, "out of host memory planning a run");
      goto done;
    }
    memcpy(p->feeds, fv, sizeof(int) * (size_t)nfeeds);
    memcpy(p->fetches, tv, sizeof(int) * (size_t)nfetches);
    memcpy(p->targets, gv, sizeof(int) * (size_t)ntargets);
    if ((code = clg_plan_build(x, p)) != CLG_OK) {
      clg_plan_free(p);
      goto done;
    }
    p->next = x->plans;
    x->plans = p;
    x->num_plans++;
  }
  *out = p;
done:
  if (fv != stack[0])
    free(fv);
  if (tv != stack[1])
    free(tv);
  if (gv != stack[2])
    free(gv);
  return code;
}

void clg_plan_cache_free(clg_executor *x)
{
  while (x->plans) {
    plan *next = x->plans->next;
    clg_plan_free(x->plans);
    x->plans = next;
  }
}
