# kernels/: the CUDA kernels and their host launchers (built only when nvcc is found).
CU_SRCS += kernels/util.cu
CU_SRCS += kernels/embedding.cu
CU_SRCS += kernels/norm.cu
CU_SRCS += kernels/activation.cu kernels/rope.cu kernels/classifier.cu kernels/adamw.cu
CU_SRCS += kernels/gemm.cu
CU_SRCS += kernels/attention.cu kernels/attention_cudnn.cu
