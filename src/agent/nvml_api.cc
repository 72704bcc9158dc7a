#include "agent/nvml_api.h"

#include <dlfcn.h>

namespace eroica::agent {
namespace {

// Binds table member `slot` to the first of `names` the library exports.
template <typename R, typename... Args>
void Bind(void* library, std::function<R(Args...)>* slot, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* symbol = ::dlsym(library, name)) {
      *slot = reinterpret_cast<R (*)(Args...)>(symbol);
      return;
    }
  }
}

}  // namespace

StatusOr<NvmlApi> LoadNvml(const std::string& library_name) {
  void* library = ::dlopen(library_name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = ::dlerror();
    return ErrorStatus("cannot load {}: {}", library_name, error ? error : "unknown error");
  }
  NvmlApi api;
  api.library = std::shared_ptr<void>(library, [](void* handle) { ::dlclose(handle); });
  Bind(library, &api.init, {"nvmlInit_v2", "nvmlInit"});
  Bind(library, &api.shutdown, {"nvmlShutdown"});
  Bind(library, &api.error_string, {"nvmlErrorString"});
  Bind(library, &api.device_get_count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  Bind(library, &api.device_get_handle_by_index, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  Bind(library, &api.device_get_name, {"nvmlDeviceGetName"});
  Bind(library, &api.device_get_utilization_rates, {"nvmlDeviceGetUtilizationRates"});
  Bind(library, &api.device_get_clock_info, {"nvmlDeviceGetClockInfo"});
  Bind(library, &api.device_get_max_clock_info, {"nvmlDeviceGetMaxClockInfo"});
  Bind(library, &api.device_get_power_usage, {"nvmlDeviceGetPowerUsage"});
  Bind(library, &api.device_get_temperature, {"nvmlDeviceGetTemperature"});
  Bind(library, &api.device_get_throttle_reasons,
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  Bind(library, &api.device_get_pcie_throughput, {"nvmlDeviceGetPcieThroughput"});
  Bind(library, &api.device_get_max_pcie_link_generation, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  Bind(library, &api.device_get_max_pcie_link_width, {"nvmlDeviceGetMaxPcieLinkWidth"});
  Bind(library, &api.device_get_field_values, {"nvmlDeviceGetFieldValues"});
  // The unversioned symbol keeps the v1 struct layout for old binaries.
  Bind(library, &api.device_get_compute_running_processes, {"nvmlDeviceGetComputeRunningProcesses"});
  if (!api.init || !api.device_get_count || !api.device_get_handle_by_index) {
    return ErrorStatus("{} lacks nvmlInit/nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex", library_name);
  }
  return api;
}

std::string NvmlErrorText(const NvmlApi& api, NvmlReturn code) {
  if (api.error_string) {
    const char* text = api.error_string(code);
    if (text != nullptr) return text;
  }
  return "NVML error " + std::to_string(code);
}

}  // namespace eroica::agent
