/* The last-error message: a huge input quoted in it is shortened, never the reason after it.
 * The JSON string escaper gives valid JSON for any C string (bytes that are not UTF-8 become
 * U+FFFD). */
#include <jansson.h>
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

/* Each text, escaped, parses (jansson checks UTF-8 strictly) back to the expected string. */
static void test_json_string(void)
{
  static const struct {
    const char *text, *want;
  } cases[] = {
#define FFFD "\xef\xbf\xbd" /* U+FFFD in UTF-8 */
      {"plain", "plain"},
      {"q\"b\\c\n\x01", "q\"b\\c\n\x01"},
      {"<!--<script>&", "<!--<script>&"},
      {"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
      {"a\xffz", "a" FFFD "z"},                  /* never in UTF-8 */
      {"\x80", FFFD},                            /* a stray continuation byte */
      {"\xc3", FFFD},                            /* cut at the end */
      {"\xe2\x82z", FFFD FFFD "z"},              /* cut before z */
      {"\xc0\xaf", FFFD FFFD},                   /* overlong '/' */
      {"\xe0\x80\xaf", FFFD FFFD FFFD},          /* overlong, 3 bytes */
      {"\xed\xa0\x80", FFFD FFFD FFFD},          /* a surrogate */
      {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD}, /* over U+10FFFF */
      {"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},  /* U+10FFFF */
#undef FFFD
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    clg_strbuf b;
    clg_strbuf_init(&b);
    clg_strbuf_printf(&b, "[");
    clg_strbuf_json_string(&b, cases[i].text);
    clg_strbuf_printf(&b, "]");
    char *text = clg_strbuf_take(&b);
    json_error_t err;
    json_t *v = text ? json_loads(text, 0, &err) : NULL;
    const char *got = json_string_value(json_array_get(v, 0));
    CHECK_MSG(got && strcmp(got, cases[i].want) == 0, "case %zu: %s gave %s (%s)", i, cases[i].text,
              text ? text : "(null)", v ? "parsed" : err.text);
    json_decref(v);
    free(text);
  }
  /* The short escapes where JSON has them. */
  clg_strbuf b;
  clg_strbuf_init(&b);
  clg_strbuf_json_string(&b, "a\nb\tc\rd\x01");
  char *text = clg_strbuf_take(&b);
  CHECK_STR(text, "\"a\\nb\\tc\\rd\\u0001\"");
  free(text);
}

int main(void)
{
  test_huge_input();
  test_json_string();
  return clg_test_summary("test_status");
}
