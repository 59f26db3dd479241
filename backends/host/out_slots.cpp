// The output slots (out_slots.hpp): two BackendSelect overrides and the slot list they read.
#include "out_slots.hpp"

#include <ATen/ops/empty_ops.h>
#include <ATen/ops/empty_strided_ops.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <deque>
#include <memory>
#include <mutex>

namespace kforge::outslots {
namespace {

std::mutex g_mu;
std::deque<at::Tensor> g_slots;  // guarded by g_mu
int g_taken = 0;                 // guarded by g_mu

bool same_sizes(c10::SymIntArrayRef want, c10::IntArrayRef have) {
  if (want.size() != have.size()) return false;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i] != have[i]) return false;
  return true;
}

bool same_place(std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                std::optional<at::Device> device, const at::Tensor& o) {
  if (dtype.value_or(c10::get_default_dtype_as_scalartype()) != o.scalar_type()) return false;
  if (layout.value_or(at::kStrided) != at::kStrided) return false;
  const at::Device d = device.value_or(at::Device(at::kCPU));
  return d.type() == o.device().type() && (!d.has_index() || d.index() == o.device().index());
}

/// A new tensor (its own TensorImpl, so resizing or re-striding it leaves the set's tensor
/// alone) over the next slot's memory, if `fits` says the next slot is the allocation asked for.
template <typename Fits>
std::optional<at::Tensor> take(Fits fits) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_slots.empty() || !fits(g_slots.front())) return std::nullopt;
  at::Tensor o = std::move(g_slots.front());
  g_slots.pop_front();
  ++g_taken;
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(o.storage()), o.key_set(), o.dtype());
  impl->set_sizes_and_strides(o.sizes(), o.strides(), o.storage_offset());
  return at::Tensor(std::move(impl));
}

at::Tensor empty_memory_format(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<at::MemoryFormat> memory_format) {
  const auto mf = memory_format.value_or(at::MemoryFormat::Contiguous);
  if (mf == at::MemoryFormat::Contiguous || mf == at::MemoryFormat::Preserve)
    if (auto t = take([&](const at::Tensor& o) {
          return same_place(dtype, layout, device, o) && same_sizes(size, o.sizes());
        }))
      return *t;
  // PyTorch's generated BackendSelect kernel (RegisterBackendSelect.cpp), unchanged.
  const c10::DispatchKeySet ks(c10::computeDispatchKey(dtype, layout, device));
  return at::_ops::empty_memory_format::redispatch(ks, size, dtype, layout, device, pin_memory,
                                                   memory_format);
}

at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
  if (auto t = take([&](const at::Tensor& o) {
        return same_place(dtype, layout, device, o) && same_sizes(size, o.sizes()) &&
               same_sizes(stride, o.strides());
      }))
    return *t;
  const c10::DispatchKeySet ks(c10::computeDispatchKey(dtype, layout, device));
  return at::_ops::empty_strided::redispatch(ks, size, stride, dtype, layout, device, pin_memory);
}

/// PyTorch warns once per override; the host's log is no place for it.
struct QuietWarnings : c10::WarningHandler {
  void process(const c10::Warning&) override {}
};

}  // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    QuietWarnings quiet;
    c10::WarningUtils::WarningHandlerGuard guard(&quiet);
    static auto* lib =
        new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::BackendSelect, __FILE__,
                           __LINE__);  // never destroyed: destroying it would restore PyTorch's
    lib->impl("empty.memory_format", TORCH_FN(empty_memory_format));
    lib->impl("empty_strided", TORCH_FN(empty_strided));
  });
}

void set(std::vector<at::Tensor> outs) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_slots.clear();
  for (auto& t : outs)
    if (t.defined() && t.layout() == at::kStrided && t.numel() > 0 && t.is_contiguous())
      g_slots.push_back(std::move(t));
}

int take_count() {
  std::lock_guard<std::mutex> lock(g_mu);
  const int n = g_taken;
  g_taken = 0;
  return n;
}

}  // namespace kforge::outslots
