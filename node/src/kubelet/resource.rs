//! How the node's devices look to the kubelet: one extended resource per kind of accelerator,
//! device ids as `accelhost list` prints them, health and NUMA node.

use accelhost::{Guid, ObjectType, Properties};

use crate::config::KubernetesSettings;
use crate::health::DeviceHealth;
use crate::kubelet::v1beta1;

/// The extended resource a device is offered as: `<domain>/af-<AFU id>` (32 lowercase hex
/// digits) for an accelerator that reports an AFU or kernel id, else
/// `<domain>/<type>-<vendor><device>` (such as `fpga-10ee5001`: an unprogrammed card of that
/// model).
pub fn resource_name(domain: &str, properties: &Properties) -> String {
    if properties.guid != Guid::default() {
        let guid = (u128::from(properties.guid.high) << 64) | u128::from(properties.guid.low);
        return format!("{domain}/af-{guid:032x}");
    }
    let kind: String = properties
        .device_type
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .take(16)
        .collect();
    let kind = if kind.is_empty() {
        "device".into()
    } else {
        kind
    };
    format!(
        "{domain}/{kind}-{:04x}{:04x}",
        properties.vendor_id, properties.device_id
    )
}

/// The socket file (in the device-plugin folder) that serves `resource`.
pub fn socket_name(resource: &str) -> String {
    let name = resource.rsplit('/').next().unwrap_or(resource);
    format!("accelhost-{name}.sock")
}

/// The NUMA node of a device: the plugin's `numa-node` extra if it gives one, else its CPU
/// socket (the DFL family reads it from sysfs), else none.
pub fn numa_node(properties: &Properties) -> Option<i64> {
    properties
        .extras
        .iter()
        .find(|(key, _)| key == "numa-node")
        .and_then(|(_, value)| value.parse().ok())
        .or(properties.socket_id.map(i64::from))
}

/// The device's `/dev` node, if its plugin reports one (emulated and remote devices have
/// none) and the plugin's grants name that very node: what a plugin reports is its own
/// text, and must not hand a pod a node the operator never gave the plugin.
pub fn device_node<'a>(properties: &'a Properties, granted: &[String]) -> Option<&'a str> {
    properties
        .extras
        .iter()
        .find(|(key, _)| key == "path")
        .map(|(_, path)| path.as_str())
        .filter(|path| path.starts_with("/dev/") && !path.contains(".."))
        .filter(|path| granted.iter().any(|g| g == path))
}

/// The devices each plugin of `host` is granted, by plugin name.
pub fn grants_by_plugin(host: &accelhost::Host) -> std::collections::BTreeMap<String, Vec<String>> {
    host.plugins()
        .into_iter()
        .map(|p| (p.name, p.grants.devices))
        .collect()
}

/// Is the device offered to the kubelet at all (an accelerator the settings select)?
pub fn offered(settings: &KubernetesSettings, device: &DeviceHealth) -> bool {
    device.properties.object_type == ObjectType::Accelerator && settings.offers(&device.id)
}

/// Every resource the offered devices make, sorted.
pub fn resources(settings: &KubernetesSettings, devices: &[DeviceHealth]) -> Vec<String> {
    let mut names: Vec<String> = devices
        .iter()
        .filter(|d| offered(settings, d))
        .map(|d| resource_name(&settings.resource_domain, &d.properties))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The devices of `resource`, as `ListAndWatch` sends them.
pub fn devices_of(
    settings: &KubernetesSettings,
    resource: &str,
    devices: &[DeviceHealth],
) -> Vec<v1beta1::Device> {
    devices
        .iter()
        .filter(|d| {
            offered(settings, d)
                && resource_name(&settings.resource_domain, &d.properties) == resource
        })
        .map(|d| v1beta1::Device {
            id: d.id.clone(),
            health: if d.healthy() { "Healthy" } else { "Unhealthy" }.into(),
            topology: numa_node(&d.properties).map(|id| v1beta1::TopologyInfo {
                nodes: vec![v1beta1::NumaNode { id }],
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn properties(guid: Guid, extras: &[(&str, &str)]) -> Properties {
        Properties {
            object_type: ObjectType::Accelerator,
            name: "emu:dfl0".into(),
            guid,
            vendor_id: 0x10ee,
            device_id: 0x5001,
            bus_address: None,
            socket_id: None,
            device_type: "fpga".into(),
            host: "localhost".into(),
            num_mmio: 1,
            num_interrupts: 0,
            accelerator_state: None,
            parent: None,
            extras: extras.iter().map(|&(k, v)| (k.into(), v.into())).collect(),
        }
    }

    #[test]
    fn resources_are_named_by_afu_id_or_by_model() {
        let nlb0: Guid = "D8424DC4-A4A3-C413-F89E-433683F9040B".parse().unwrap();
        assert_eq!(
            resource_name("accelhost.io", &properties(nlb0, &[])),
            "accelhost.io/af-d8424dc4a4a3c413f89e433683f9040b"
        );
        assert_eq!(
            resource_name("example.org", &properties(Guid::default(), &[])),
            "example.org/fpga-10ee5001"
        );
        assert_eq!(
            socket_name("accelhost.io/fpga-10ee5001"),
            "accelhost-fpga-10ee5001.sock"
        );
    }

    #[test]
    fn numa_node_and_device_node_come_from_what_the_plugin_reports() {
        let mut p = properties(Guid::default(), &[("path", "/dev/dfl-port.0")]);
        assert_eq!(numa_node(&p), None);
        p.socket_id = Some(1);
        assert_eq!(numa_node(&p), Some(1));
        p.extras.push(("numa-node".into(), "3".into()));
        assert_eq!(numa_node(&p), Some(3));
        let granted = |paths: &[&str]| paths.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            device_node(&p, &granted(&["/dev/dfl-port.0"])),
            Some("/dev/dfl-port.0")
        );
        assert_eq!(
            device_node(&p, &granted(&["/dev/dfl-port.1"])),
            None,
            "a node the plugin is not granted is never passed"
        );
        for path in [
            "emu:dfl0",
            "/dev/../etc/shadow",
            "/sys/class/fpga_region",
            "/dev/mem",
        ] {
            let p = properties(Guid::default(), &[("path", path)]);
            assert_eq!(
                device_node(&p, &granted(&["/dev/dfl-port.0"])),
                None,
                "{path}"
            );
        }
    }
}
