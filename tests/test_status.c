/* The last-error message: a huge input quoted in it is shortened, never the reason after it. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "testutil.h"

static bool ends_with(const char *s, const char *end)
{
  size_t n = strlen(s), m = strlen(end);
  return n >= m && strcmp(s + n - m, end) == 0;
}

static char *text_of(size_t n, char c)
{
  char *s = malloc(n + 1);
  memset(s, c, n);
  s[n] = '\0';
  return s;
}

static void test_huge_input(void)
{
  char *huge = text_of(10000, 'x');
  /* quoted: shortened to its head and its length */
  clg_error(CLG_INVALID_ARGUMENT, "name '%s' is not valid: it is too long", huge);
  CHECK(clg_last_code() == CLG_INVALID_ARGUMENT);
  CHECK(ends_with(clg_last_error(), "' (10000 characters) is not valid: it is too long"));
  CHECK(strncmp(clg_last_error(), "name 'xxx", 9) == 0);
  CHECK(strlen(clg_last_error()) < 200);
  /* unquoted: the middle goes, the end stays */
  clg_error(CLG_INVALID_ARGUMENT, "value %s is not valid: it is too long", huge);
  CHECK(ends_with(clg_last_error(), "xxx is not valid: it is too long"));
  CHECK(strncmp(clg_last_error(), "value xxx", 9) == 0);
  CHECK(strstr(clg_last_error(), " ... ") != NULL);
  /* a prefix quoting a huge input leaves the message after it whole */
  clg_error(CLG_NOT_FOUND, "the reason");
  CHECK_CODE(clg_error_prefix("node '%s': ", huge), CLG_NOT_FOUND);
  CHECK(ends_with(clg_last_error(), "...' (10000 characters): the reason"));
  /* an unquoted huge prefix too */
  clg_error(CLG_NOT_FOUND, "the reason");
  clg_error_prefix("%s: ", huge);
  CHECK(ends_with(clg_last_error(), "the reason"));
  CHECK(strlen(clg_last_error()) < 4096);
  /* short messages are untouched */
  clg_error(CLG_INVALID_ARGUMENT, "name '%s' is bad", "abc");
  clg_error_prefix("node '%s': ", "n");
  CHECK_STR(clg_last_error(), "node 'n': name 'abc' is bad");
  free(huge);
}

int main(void)
{
  test_huge_input();
  return clg_test_summary("test_status");
}
