cuda_tool: kernel k0_const of serial: a top-level statement that is not a gpu-block loop (the program is not scheduled for the gpu)
