//! OPAE's metrics calls (`metrics.h`) over the hwmon sensors of a card: the `hwmon/hwmonN/`
//! attributes of the device object (for an accelerator's handle, of its parent FME). A
//! `tempK_input` (millidegrees) is a thermal metric in degrees Celsius, a `powerK_input`
//! (microwatts) a power metric in watts; `tempK_max` / `tempK_crit` are its thresholds. The
//! emulators' sensors say `(emulated)` in their names.

use std::ffi::{CStr, c_char};

use accelhost::Token;

use crate::attributes::{device_name, read_number};
use crate::ffi::{fill_field, guard, non_null, slice, write_out};
use crate::handle::handle_of;
use crate::result::{CapiError, CapiResult, invalid};
use crate::types::*;

/// One sensor.
struct Metric {
    group: &'static str,
    name: String,
    units: &'static str,
    kind: i32,
    /// The attribute with the reading, such as `hwmon/hwmon0/temp1_input`.
    input: String,
    /// What one unit of the attribute is in the metric's units.
    scale: f64,
    /// `(threshold name, attribute)`: upper critical and upper non-critical.
    thresholds: Vec<(&'static str, String)>,
}

/// The device whose sensors a handle reads: the device itself, or an accelerator's parent.
fn sensor_device(handle: fpga_handle) -> CapiResult<Token> {
    let token = handle_of(handle)?.token.clone();
    if token.properties().object_type == accelhost::ObjectType::Device {
        return Ok(token);
    }
    Ok(token.parent()?.unwrap_or(token))
}

fn metrics_of(token: &Token) -> CapiResult<Vec<Metric>> {
    let list = token.attributes()?;
    let has = |name: &str| list.iter().any(|a| a.name == name);
    let mut found = Vec::new();
    for attribute in &list {
        let Some(rest) = attribute.name.strip_prefix("hwmon/") else {
            continue;
        };
        let Some((dir, file)) = rest.split_once('/') else {
            continue;
        };
        let (stem, group, units, kind, scale) = if let Some(stem) = file
            .strip_suffix("_input")
            .filter(|s| s.starts_with("temp"))
        {
            (
                stem,
                "thermal_mgmt",
                "Centigrade",
                FPGA_METRIC_TYPE_THERMAL,
                1e-3,
            )
        } else if let Some(stem) = file
            .strip_suffix("_input")
            .filter(|s| s.starts_with("power"))
        {
            (stem, "power_mgmt", "Watts", FPGA_METRIC_TYPE_POWER, 1e-6)
        } else {
            continue;
        };
        let base = format!("hwmon/{dir}/{stem}");
        let label = format!("{base}_label");
        let name = if has(&label) {
            token.read_attribute(&label)?
        } else {
            format!("{dir}_{stem}")
        };
        let thresholds = [("Upper Critical", "_crit"), ("Upper Non-Critical", "_max")]
            .into_iter()
            .map(|(what, suffix)| (what, format!("{base}{suffix}")))
            .filter(|(_, attribute)| has(attribute))
            .collect();
        found.push(Metric {
            group,
            name,
            units,
            kind,
            input: attribute.name.clone(),
            scale,
            thresholds,
        });
    }
    Ok(found)
}

fn read(token: &Token, metric: &Metric, num: u64) -> CapiResult<fpga_metric> {
    let raw = read_number(token, &metric.input)?;
    Ok(fpga_metric {
        metric_num: num,
        value: metric_value {
            dvalue: raw as f64 * metric.scale,
        },
        isvalid: true,
    })
}

fn threshold_of(name: &str, value: Option<f64>) -> threshold {
    let mut t = threshold {
        threshold_name: [0; FPGA_METRIC_STR_SIZE],
        is_valid: u32::from(value.is_some()),
        value: value.unwrap_or(0.0),
    };
    fill_field(&mut t.threshold_name, name);
    t
}

/// Reads into `metrics[i]` the metric of `device` that `pick` chooses for `wanted[i]`
/// (its number among all of them).
///
/// # Safety
/// `metrics` must be NULL or valid for `wanted.len()` writes.
unsafe fn read_picked<T>(
    device: &Token,
    wanted: &[T],
    metrics: *mut fpga_metric,
    pick: impl Fn(&[Metric], &T) -> CapiResult<usize>,
) -> CapiResult {
    non_null(metrics, "metrics")?;
    let all = metrics_of(device)?;
    for (i, choice) in wanted.iter().enumerate() {
        let num = pick(&all, choice)?;
        let value = read(device, &all[num], num as u64)?;
        // SAFETY: `i < wanted.len()`, valid for writes by the caller's contract.
        unsafe { metrics.add(i).write(value) };
    }
    Ok(())
}

/// OPAE's `fpgaGetNumMetrics`: how many metrics the handle's card has (0 without sensors).
///
/// # Safety
/// `num_metrics` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetNumMetrics(
    handle: fpga_handle,
    num_metrics: *mut u64,
) -> fpga_result {
    guard("fpgaGetNumMetrics", || {
        let device = sensor_device(handle)?;
        non_null(num_metrics, "num_metrics")?;
        let count = metrics_of(&device)?.len() as u64;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(num_metrics, count, "num_metrics") }
    })
}

/// OPAE's `fpgaGetMetricsInfo`: fills the first `*num_metrics` entries of `metric_info`
/// and sets `*num_metrics` to the number filled.
///
/// # Safety
/// `num_metrics` must be NULL or valid for a read and a write; `metric_info` NULL or valid
/// for `*num_metrics` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetMetricsInfo(
    handle: fpga_handle,
    metric_info: *mut fpga_metric_info,
    num_metrics: *mut u64,
) -> fpga_result {
    guard("fpgaGetMetricsInfo", || {
        let device = sensor_device(handle)?;
        non_null(metric_info, "metric_info")?;
        non_null(num_metrics, "num_metrics")?;
        // SAFETY: non-NULL, valid for a read by the caller's contract.
        let room = unsafe { num_metrics.read() };
        let metrics = metrics_of(&device)?;
        let filled = metrics
            .len()
            .min(usize::try_from(room).unwrap_or(usize::MAX));
        for (i, metric) in metrics.iter().take(filled).enumerate() {
            let mut info = fpga_metric_info {
                metric_num: i as u64,
                metric_guid: [0; 16],
                qualifier_name: [0; FPGA_METRIC_STR_SIZE],
                group_name: [0; FPGA_METRIC_STR_SIZE],
                metric_name: [0; FPGA_METRIC_STR_SIZE],
                metric_units: [0; FPGA_METRIC_STR_SIZE],
                metric_datatype: FPGA_METRIC_DATATYPE_DOUBLE,
                metric_type: metric.kind,
            };
            fill_field(
                &mut info.qualifier_name,
                &format!("{}:{}", metric.group, metric.name),
            );
            fill_field(&mut info.group_name, metric.group);
            fill_field(&mut info.metric_name, &metric.name);
            fill_field(&mut info.metric_units, metric.units);
            // SAFETY: `i < *num_metrics`, valid for writes by the caller's contract.
            unsafe { metric_info.add(i).write(info) };
        }
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(num_metrics, filled as u64, "num_metrics") }
    })
}

/// OPAE's `fpgaGetMetricsByIndex`: reads the metrics numbered in `metric_num`.
///
/// # Safety
/// `metric_num` must be NULL or valid for `num_metric_indexes` reads; `metrics` NULL or
/// valid for as many writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetMetricsByIndex(
    handle: fpga_handle,
    metric_num: *mut u64,
    num_metric_indexes: u64,
    metrics: *mut fpga_metric,
) -> fpga_result {
    guard("fpgaGetMetricsByIndex", || {
        let device = sensor_device(handle)?;
        let count = u32::try_from(num_metric_indexes)
            .map_err(|_| invalid("num_metric_indexes is too large"))?;
        // SAFETY: NULL or valid for `count` reads by the caller's contract.
        let wanted = unsafe {
            slice(
                metric_num.cast_const(),
                count,
                "metric_num",
                "num_metric_indexes",
            )
        }?;
        let by_index = |all: &[Metric], &num: &u64| {
            usize::try_from(num)
                .ok()
                .filter(|&n| n < all.len())
                .ok_or_else(|| {
                    CapiError::NotFound(format!(
                        "{} has {} metrics; there is no number {num}",
                        device_name(&device),
                        all.len()
                    ))
                })
        };
        // SAFETY: NULL or valid for `count` writes by the caller's contract.
        unsafe { read_picked(&device, wanted, metrics, by_index) }
    })
}

/// OPAE's `fpgaGetMetricsByName`: reads the metrics named in `metrics_names` (a metric's
/// name or `<group>:<name>`, in any case).
///
/// # Safety
/// `metrics_names` must be NULL or valid for `num_metric_names` reads of NUL-terminated
/// strings; `metrics` NULL or valid for as many writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetMetricsByName(
    handle: fpga_handle,
    metrics_names: *mut *mut c_char,
    num_metric_names: u64,
    metrics: *mut fpga_metric,
) -> fpga_result {
    guard("fpgaGetMetricsByName", || {
        let device = sensor_device(handle)?;
        let count = u32::try_from(num_metric_names)
            .map_err(|_| invalid("num_metric_names is too large"))?;
        // SAFETY: NULL or valid for `count` reads by the caller's contract.
        let names = unsafe {
            slice(
                metrics_names.cast_const(),
                count,
                "metrics_names",
                "num_metric_names",
            )
        }?;
        let by_name = |all: &[Metric], &name: &*mut c_char| {
            non_null(name, "a metric name")?;
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            let found = all.iter().position(|m| {
                m.name.eq_ignore_ascii_case(&name)
                    || format!("{}:{}", m.group, m.name).eq_ignore_ascii_case(&name)
            });
            found.ok_or_else(|| {
                CapiError::NotFound(format!(
                    "{} has no metric named {name:?}",
                    device_name(&device)
                ))
            })
        };
        // SAFETY: NULL or valid for `count` writes by the caller's contract.
        unsafe { read_picked(&device, names, metrics, by_name) }
    })
}

/// OPAE's `fpgaGetMetricsThresholdInfo`: with `metric_thresholds` NULL, sets
/// `*num_thresholds` to the number of metrics; else fills that many entries.
///
/// # Safety
/// `num_thresholds` must be NULL or valid for a read and a write; `metric_thresholds` NULL
/// or valid for `*num_thresholds` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetMetricsThresholdInfo(
    handle: fpga_handle,
    metric_thresholds: *mut metric_threshold,
    num_thresholds: *mut u32,
) -> fpga_result {
    guard("fpgaGetMetricsThresholdInfo", || {
        let device = sensor_device(handle)?;
        non_null(num_thresholds, "num_thresholds")?;
        let all = metrics_of(&device)?;
        if metric_thresholds.is_null() {
            let count = u32::try_from(all.len()).unwrap_or(u32::MAX);
            // SAFETY: non-NULL, valid for one write by the caller's contract.
            return unsafe { write_out(num_thresholds, count, "num_thresholds") };
        }
        // SAFETY: non-NULL, valid for a read by the caller's contract.
        let room = unsafe { num_thresholds.read() } as usize;
        let filled = all.len().min(room);
        for (i, metric) in all.iter().take(filled).enumerate() {
            let value = |what: &str| -> CapiResult<Option<f64>> {
                match metric.thresholds.iter().find(|(name, _)| *name == what) {
                    Some((_, attribute)) => {
                        Ok(Some(read_number(&device, attribute)? as f64 * metric.scale))
                    }
                    None => Ok(None),
                }
            };
            let mut entry = metric_threshold {
                metric_name: [0; FPGA_METRIC_STR_SIZE],
                upper_nr_threshold: threshold_of("Upper Non-Recoverable", None),
                upper_c_threshold: threshold_of("Upper Critical", value("Upper Critical")?),
                upper_nc_threshold: threshold_of(
                    "Upper Non-Critical",
                    value("Upper Non-Critical")?,
                ),
                lower_nr_threshold: threshold_of("Lower Non-Recoverable", None),
                lower_c_threshold: threshold_of("Lower Critical", None),
                lower_nc_threshold: threshold_of("Lower Non-Critical", None),
                hysteresis: threshold_of("Hysteresis", None),
            };
            fill_field(&mut entry.metric_name, &metric.name);
            // SAFETY: `i < *num_thresholds`, valid for writes by the caller's contract.
            unsafe { metric_thresholds.add(i).write(entry) };
        }
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(num_thresholds, filled as u32, "num_thresholds") }
    })
}
