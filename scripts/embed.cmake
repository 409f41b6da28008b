# embed.cmake — turns a text file into a C source holding its bytes.
#
# Usage: cmake -DINPUT=file -DOUTPUT=out.c -DSYMBOL=name -P embed.cmake
# Writes
#   const char name_src[];          the bytes of INPUT followed by a NUL
#   const unsigned long name_len;   the byte count, NUL excluded
# The bytes are written as hex so any content (quotes, backslashes, non-ASCII)
# survives, and the output only changes when the input does.
if(NOT DEFINED INPUT OR NOT DEFINED OUTPUT OR NOT DEFINED SYMBOL)
  message(FATAL_ERROR "embed.cmake needs -DINPUT=, -DOUTPUT= and -DSYMBOL=")
endif()

file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" nhex)
math(EXPR nbytes "${nhex} / 2")

# 16 bytes per line, each as a character constant ('\xab'): unlike 0xab it
# converts to a (possibly signed) char without an overflow warning, and unlike
# one long string literal it has no length limit under -Wpedantic.
set(bytes "")
set(pos 0)
while(pos LESS nhex)
  string(SUBSTRING "${hex}" ${pos} 32 chunk)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1', " chunk "${chunk}")
  string(REGEX REPLACE " $" "" chunk "${chunk}")
  string(APPEND bytes "  ${chunk}\n")
  math(EXPR pos "${pos} + 32")
endwhile()

get_filename_component(name "${INPUT}" NAME)
set(out "// Generated from ${name} by scripts/embed.cmake; do not edit.\n")
string(APPEND out "const char ${SYMBOL}_src[] = {\n${bytes}  0\n};\n")
string(APPEND out "const unsigned long ${SYMBOL}_len = ${nbytes}UL;\n")

# Write only on change so dependants are not rebuilt needlessly.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL out)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${out}")
