// main_obj.c — the generated program's main for a model object (`mlc build
// --emit obj`), to link the same model against another build of the
// runtime: tests/hostile/run.py --san links it with the sanitizer build
// (libmlc_rt_san.a). MLC_MODEL is the descriptor's name, mlc_model_<cname>.
#include "mlc_rt.h"

extern const MlcModel MLC_MODEL;

int main(int argc, char **argv) { return mlc_main(argc, argv, &MLC_MODEL); }
