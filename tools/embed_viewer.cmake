# Turns tools/trace_viewer.html.in into a C string (clg_tool_trace_viewer) for `clgraph
# trace-html`, so that the tool needs no file beside it.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
file(WRITE ${OUT}.tmp "// Generated from tools/trace_viewer.html.in by tools/embed_viewer.cmake: do not edit.\nconst char clg_tool_trace_viewer[] = {${hex} 0x00};\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
