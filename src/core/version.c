#include "clgraph.h"

const char *clg_version(void) { return CLG_VERSION; }
