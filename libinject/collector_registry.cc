// The fixed-size registry behind RegisterCollector (collector_interface.h). Fixed storage,
// so registration from static initializers needs no dynamic initialization order.
#include "collectors/collector_interface.h"

namespace warpscope {
namespace {
CollectorRegistration g_registrations[kMaxCollectors];
size_t g_count = 0;
}  // namespace

bool RegisterCollector(const CollectorRegistration& registration) {
  if (g_count >= kMaxCollectors) return false;
  g_registrations[g_count++] = registration;
  return true;
}

size_t RegisteredCollectors(const CollectorRegistration** out) {
  *out = g_registrations;
  return g_count;
}

}  // namespace warpscope
