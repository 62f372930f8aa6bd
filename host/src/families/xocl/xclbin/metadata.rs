//! EMBEDDED_METADATA: the kernels and their arguments as XRT's XML states them, read with
//! every check the register map relies on, and written in the shape XRT's userspace reads.

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use super::*;
use crate::families::xocl::abi;

/// Where `<kernel>` elements sit in XRT's metadata.
const KERNEL_PATH: [&str; 4] = ["project", "platform", "device", "core"];

fn meta_err(message: String) -> XclbinError {
    XclbinError::Metadata(message)
}

/// The kernels the metadata describes, and its compute units' instance names, each with the
/// kernel it is an instance of (XRT's `<instance name="...">` inside a `<kernel>`).
pub(super) type Metadata = (Vec<KernelMeta>, Vec<(String, String)>);

pub(super) fn parse_metadata(payload: &[u8]) -> Result<Metadata, XclbinError> {
    let end = payload.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let text = std::str::from_utf8(&payload[..end]).map_err(|e| {
        meta_err(format!(
            "the XML is not valid UTF-8 (at byte {})",
            e.valid_up_to()
        ))
    })?;
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<String> = Vec::new();
    let mut kernels: Vec<KernelMeta> = Vec::new();
    let mut instances: Vec<(String, String)> = Vec::new();
    let mut root_seen = false;
    loop {
        let event = reader.read_event().map_err(|e| {
            meta_err(format!(
                "malformed XML at byte {}: {e}",
                reader.error_position()
            ))
        })?;
        match event {
            Event::Start(e) => {
                let name = open_element(&e, &stack, &mut root_seen, &mut kernels, &mut instances)?;
                stack.push(name);
            }
            Event::Empty(e) => {
                open_element(&e, &stack, &mut root_seen, &mut kernels, &mut instances)?;
            }
            Event::End(_) => {
                stack.pop();
            }
            Event::Text(t) if stack.is_empty() && !t.trim_ascii().is_empty() => {
                return Err(meta_err("text outside the <project> element".to_owned()));
            }
            Event::CData(_) | Event::GeneralRef(_) if stack.is_empty() => {
                return Err(meta_err("text outside the <project> element".to_owned()));
            }
            Event::DocType(_) => {
                return Err(meta_err("a DOCTYPE is not allowed".to_owned()));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(meta_err(format!("element <{open}> is never closed")));
    }
    if !root_seen {
        return Err(meta_err("there is no <project> element".to_owned()));
    }
    Ok((kernels, instances))
}

/// Checks an opening tag and records `<kernel>` / `<arg>` / `<instance>`; returns the element
/// name.
fn open_element(
    e: &BytesStart<'_>,
    stack: &[String],
    root_seen: &mut bool,
    kernels: &mut Vec<KernelMeta>,
    instances: &mut Vec<(String, String)>,
) -> Result<String, XclbinError> {
    let name = e.name().as_ref().to_owned();
    if stack.is_empty() {
        if *root_seen {
            return Err(meta_err(format!(
                "a second root element <{name}> follows <project>"
            )));
        }
        if name != "project" {
            return Err(meta_err(format!(
                "the root element is <{name}>, expected <project>"
            )));
        }
        *root_seen = true;
    }
    let attrs = attributes(e, &name)?;
    let attr = |key: &str| {
        attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if name == "kernel" && *stack == KERNEL_PATH {
        let kernel = attr("name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| meta_err("a <kernel> has no name".to_owned()))?;
        if kernels.iter().any(|k| k.name == kernel) {
            return Err(meta_err(format!("kernel '{kernel}' is described twice")));
        }
        kernels.push(KernelMeta {
            name: kernel.to_owned(),
            args: Vec::new(),
        });
    } else if (name == "arg" || name == "instance")
        && stack.len() == KERNEL_PATH.len() + 1
        && stack[..KERNEL_PATH.len()] == KERNEL_PATH
        && stack[KERNEL_PATH.len()] == "kernel"
    {
        let Some(kernel) = kernels.last_mut() else {
            return Err(meta_err(format!("an <{name}> outside a kernel")));
        };
        if name == "instance" {
            let instance = attr("name").filter(|n| !n.is_empty()).ok_or_else(|| {
                meta_err(format!(
                    "kernel '{}' has an unnamed <instance>",
                    kernel.name
                ))
            })?;
            if instances.iter().any(|(i, _)| i == instance) {
                return Err(meta_err(format!("instance '{instance}' is listed twice")));
            }
            instances.push((instance.to_owned(), kernel.name.clone()));
            return Ok(name);
        }
        let arg = parse_arg(&kernel.name, attr)?;
        if kernel.args.iter().any(|a| a.index == arg.index) {
            return Err(meta_err(format!(
                "kernel '{}' has two arguments with id {}",
                kernel.name, arg.index
            )));
        }
        kernel.args.push(arg);
    }
    Ok(name)
}

fn attributes(e: &BytesStart<'_>, element: &str) -> Result<Vec<(String, String)>, XclbinError> {
    e.attributes()
        .map(|a| {
            let a = a.map_err(|err| meta_err(format!("element <{element}>: {err}")))?;
            let value = a
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|err| meta_err(format!("element <{element}>: {err}")))?;
            Ok((a.key.as_ref().to_owned(), value.into_owned()))
        })
        .collect()
}

fn parse_arg<'a>(
    kernel: &str,
    attr: impl Fn(&str) -> Option<&'a str>,
) -> Result<KernelArg, XclbinError> {
    let name = attr("name")
        .filter(|n| !n.is_empty())
        .ok_or_else(|| meta_err(format!("kernel '{kernel}' has an <arg> without a name")))?;
    let number = |key: &str| {
        let value = attr(key).ok_or_else(|| {
            meta_err(format!(
                "kernel '{kernel}' argument '{name}' has no {key} attribute"
            ))
        })?;
        parse_number(value).ok_or_else(|| {
            meta_err(format!(
                "kernel '{kernel}' argument '{name}': {key}=\"{value}\" is not a number"
            ))
        })
    };
    let index = number("id")?;
    let kind = match number("addressQualifier")? {
        0 => ArgKind::Scalar,
        1 => ArgKind::Global,
        3 => ArgKind::Local,
        other => {
            return Err(meta_err(format!(
                "kernel '{kernel}' argument '{name}' has addressQualifier {other}; \
                 only 0 (scalar), 1 (global) and 3 (local) are supported"
            )));
        }
    };
    let offset = number("offset")?;
    let size = number("size")?;
    let (kernel, arg) = (kernel.to_owned(), name.to_owned());
    if u64::from(offset) < abi::ARGS_BASE {
        return Err(XclbinError::ArgOffset {
            kernel,
            arg,
            offset,
        });
    }
    if offset % 4 != 0 {
        return Err(XclbinError::ArgMisaligned {
            kernel,
            arg,
            offset,
        });
    }
    // A pointer or number, or a larger value (an OpenCL C vector or struct) in whole words.
    // (At most 1 KiB: more than a compute unit's whole argument registers.)
    let larger_value = kind == ArgKind::Scalar && size > 8 && size % 4 == 0 && size <= 1024;
    if size != 4 && size != 8 && !larger_value {
        return Err(XclbinError::ArgSize { kernel, arg, size });
    }
    Ok(KernelArg {
        name: arg,
        index,
        offset,
        size,
        kind,
    })
}

/// A decimal or `0x` hexadecimal u32.
fn parse_number(text: &str) -> Option<u32> {
    let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// EMBEDDED_METADATA in XRT's shape, with the attributes XRT's userspace reads.
pub(super) fn metadata_xml(kernels: &[KernelMeta], ips: &[IpEntry], mode: u16) -> String {
    let target = match mode {
        MODE_SW_EMU => "sw_emu",
        MODE_HW_EMU | MODE_HW_EMU_PR => "hw_emu",
        _ => "hw",
    };
    let project = kernels.first().map_or("accelhost", |k| k.name.as_str());
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project name=\"{}\">\n  <platform>\n    \
         <device name=\"fpga0\">\n      <core name=\"OCL_REGION_0\" target=\"{target}\">\n",
        xml_escape(project)
    );
    for kernel in kernels {
        xml.push_str(&format!(
            "        <kernel name=\"{}\" language=\"c\" hwControlProtocol=\"ap_ctrl_hs\">\n",
            xml_escape(&kernel.name)
        ));
        for arg in &kernel.args {
            let (qualifier, port, ty) = match (arg.kind, arg.size) {
                (ArgKind::Global, _) => (1, "M_AXI_GMEM", "void*"),
                (ArgKind::Scalar, 8) => (0, "S_AXI_CONTROL", "unsigned long"),
                (ArgKind::Scalar, _) => (0, "S_AXI_CONTROL", "unsigned int"),
                (ArgKind::Local, _) => (3, "S_AXI_CONTROL", "void*"),
            };
            xml.push_str(&format!(
                "          <arg name=\"{}\" addressQualifier=\"{qualifier}\" id=\"{}\" \
                 port=\"{port}\" size=\"{:#x}\" offset=\"{:#x}\" hostOffset=\"0x0\" \
                 hostSize=\"{:#x}\" type=\"{ty}\"/>\n",
                xml_escape(&arg.name),
                arg.index,
                arg.size,
                arg.offset,
                arg.size
            ));
        }
        let mut listed = std::collections::HashSet::new();
        for ip in ips.iter().filter(|ip| {
            ip.kind == IpKind::Kernel
                && ip.kernel == kernel.name
                && listed.insert(ip.instance_name())
        }) {
            xml.push_str(&format!(
                "          <instance name=\"{}\"/>\n",
                xml_escape(ip.instance_name())
            ));
        }
        xml.push_str("        </kernel>\n");
    }
    xml.push_str("      </core>\n    </device>\n  </platform>\n</project>\n");
    xml
}
