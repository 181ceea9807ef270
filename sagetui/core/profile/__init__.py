"""Inside the fused main loop: Nsight Compute's per-instruction warp-stall samples, each
instruction placed in a phase by its outermost inline frame in the kernel's own source
(docs/architecture.md, What is measured). Pure: parses text that ncu and nvdisasm wrote;
runs nothing."""
