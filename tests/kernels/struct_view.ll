; A kernel taking a struct by value that holds global pointers, one of them in a struct inside
; it, as the SYCL compiler passes dpnp's indexers: the signature's type has global pointers,
; and the body reads the memory as the host's struct, each pointer a 64-bit integer made a
; generic pointer. The host lays the struct out with 8-byte pointers (scale at 0, offset at 8,
; data at 16, tag at 24, weights at 32; 40 bytes), the card's type with 4-byte ones.
; out[i] = data[i + offset] * scale + tag + (int)weights[i]. SPIR, for clang to make SPIR-V of
; with LLVM's translator (OpenCL C allows no pointer in a kernel's struct).
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64"
target triple = "spir64-unknown-unknown"

%struct.view = type { i32, i64, i32 addrspace(1)*, { i16, float addrspace(1)* } }
%struct.host_view = type { i32, i64, i64, { i16, i64 } }

define spir_kernel void @through_a_view(i32 addrspace(1)* %out, %struct.view* byval(%struct.view) align 8 %view) !kernel_arg_addr_space !1 !kernel_arg_access_qual !2 !kernel_arg_type !3 !kernel_arg_base_type !3 !kernel_arg_type_qual !4 {
  %i = call spir_func i64 @_Z13get_global_idj(i32 0)
  %host = bitcast %struct.view* %view to %struct.host_view*
  %scale_at = getelementptr inbounds %struct.host_view, %struct.host_view* %host, i64 0, i32 0
  %scale = load i32, i32* %scale_at
  %offset_at = getelementptr inbounds %struct.host_view, %struct.host_view* %host, i64 0, i32 1
  %offset = load i64, i64* %offset_at
  %data_at = getelementptr inbounds %struct.host_view, %struct.host_view* %host, i64 0, i32 2
  %data_bits = load i64, i64* %data_at
  %data = inttoptr i64 %data_bits to i32 addrspace(4)*
  %j = add i64 %i, %offset
  %src = getelementptr inbounds i32, i32 addrspace(4)* %data, i64 %j
  %x = load i32, i32 addrspace(4)* %src
  %tag_at = getelementptr inbounds %struct.host_view, %struct.host_view* %host, i64 0, i32 3, i32 0
  %tag = load i16, i16* %tag_at
  %tag32 = sext i16 %tag to i32
  %weights_at = getelementptr inbounds %struct.host_view, %struct.host_view* %host, i64 0, i32 3, i32 1
  %weights_bits = load i64, i64* %weights_at
  %weights = inttoptr i64 %weights_bits to float addrspace(4)*
  %w_at = getelementptr inbounds float, float addrspace(4)* %weights, i64 %i
  %w = load float, float addrspace(4)* %w_at
  %wi = fptosi float %w to i32
  %scaled = mul i32 %x, %scale
  %plus = add i32 %scaled, %tag32
  %result = add i32 %plus, %wi
  %dst = getelementptr inbounds i32, i32 addrspace(1)* %out, i64 %i
  store i32 %result, i32 addrspace(1)* %dst
  ret void
}

declare spir_func i64 @_Z13get_global_idj(i32)

!1 = !{i32 1, i32 0}
!2 = !{!"none", !"none"}
!3 = !{!"int*", !"struct view"}
!4 = !{!"", !""}
