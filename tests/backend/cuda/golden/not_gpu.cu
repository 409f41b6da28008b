cuda_tool: program cpu_prog is scheduled for cpu, not the gpu target
