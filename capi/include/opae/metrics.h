/* accelhost's OPAE-compatible C API: a card's sensors, from the hwmon attributes of its
 * device object (for an accelerator's handle, of its parent) (capi/README.md). */
#ifndef __FPGA_METRICS_H__
#define __FPGA_METRICS_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

fpga_result fpgaGetNumMetrics(fpga_handle handle, uint64_t *num_metrics);
fpga_result fpgaGetMetricsInfo(fpga_handle handle, fpga_metric_info *metric_info,
			       uint64_t *num_metrics);
fpga_result fpgaGetMetricsByIndex(fpga_handle handle, uint64_t *metric_num,
				  uint64_t num_metric_indexes, fpga_metric *metrics);
fpga_result fpgaGetMetricsByName(fpga_handle handle, char **metrics_names,
				 uint64_t num_metric_names, fpga_metric *metrics);
fpga_result fpgaGetMetricsThresholdInfo(fpga_handle handle,
					struct metric_threshold *metric_thresholds,
					uint32_t *num_thresholds);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_METRICS_H__ */
