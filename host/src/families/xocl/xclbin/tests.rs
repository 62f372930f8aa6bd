use super::build::{ip_data, table_bytes};
use super::layout::IpLayout;
use super::*;

// Where XRT's xclbin.h puts the fields these tests read or corrupt, written out rather than
// taken from `layout`, so that they check it.
const HDR_LENGTH: usize = 304;
const HDR_VERSION_MAJOR: usize = 304 + 26;
const HDR_MODE: usize = 304 + 28;
const HDR_UUID: usize = 304 + 112;
const HDR_NUM_SECTIONS: usize = 304 + 144;
const MEM_TOPOLOGY_HEADER: usize = 8;
const MEM_DATA_SIZE: usize = 40;
const MEM_TAG_SIZE: usize = 16;
const IP_LAYOUT_HEADER: usize = 8;

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) {
    out[at..at + bytes.len()].copy_from_slice(bytes);
}

const UUID: Guid = Guid::new(0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210);

fn vadd_image() -> Vec<u8> {
    XclbinBuilder::vadd(UUID, 3, 2).build()
}

fn err(bytes: &[u8]) -> String {
    parse(bytes).unwrap_err().to_string()
}

/// The table position and file offset of the first section of `kind`.
fn section_at(bytes: &[u8], kind: u32) -> (usize, usize) {
    let count = u32_at(bytes, HDR_NUM_SECTIONS) as usize;
    (0..count)
        .map(|i| (i, SECTION_TABLE_OFFSET + i * SECTION_HEADER_SIZE))
        .find(|&(_, h)| u32_at(bytes, h) == kind)
        .map(|(i, h)| (i, u64_at(bytes, h + 24) as usize))
        .unwrap()
}

fn with_length(mut bytes: Vec<u8>) -> Vec<u8> {
    let len = bytes.len() as u64;
    put(&mut bytes, HDR_LENGTH, &len.to_le_bytes());
    bytes
}

fn vadd_meta() -> KernelMeta {
    parse(&vadd_image()).unwrap().kernels.remove(0)
}

#[test]
fn vadd_image_round_trips() {
    let bytes = vadd_image();
    let x = parse(&bytes).unwrap();
    assert_eq!(x.uuid, UUID);
    assert_eq!(x.uuid.to_string(), "01234567-89AB-CDEF-FEDC-BA9876543210");
    assert_eq!(bytes[HDR_UUID..HDR_UUID + 4], [0x01, 0x23, 0x45, 0x67]);
    assert_eq!(bytes[HDR_VERSION_MAJOR..HDR_VERSION_MAJOR + 2], [2, 15]);
    assert_eq!(bytes[HDR_MODE..HDR_MODE + 2], MODE_SW_EMU.to_le_bytes());
    assert_eq!(u64_at(&bytes, HDR_LENGTH), bytes.len() as u64);
    assert_eq!(u32_at(&bytes, HDR_NUM_SECTIONS), 4);
    let (_, mem) = section_at(&bytes, SECTION_MEM_TOPOLOGY);
    let second = mem + MEM_TOPOLOGY_HEADER + MEM_DATA_SIZE;
    assert_eq!(u32_at(&bytes, mem), 2, "m_count");
    assert_eq!(bytes[second..second + 2], [MemKind::Ddr4.raw(), 1]);
    assert_eq!(u64_at(&bytes, second + 8), 1 << 20, "m_size in KiB");
    assert_eq!(
        u64_at(&bytes, second + 16),
        0x40_4000_0000,
        "m_base_address"
    );
    assert_eq!(&bytes[second + 24..second + 30], b"bank1\0");
    assert_eq!(x.mode, MODE_SW_EMU);
    assert_eq!(x.length, bytes.len() as u64);

    assert_eq!(
        x.banks,
        [
            MemBank {
                index: 0,
                kind: MemKind::Ddr4,
                used: true,
                base: 0x40_0000_0000,
                size: 1 << 30,
                tag: "bank0".into(),
            },
            MemBank {
                index: 1,
                kind: MemKind::Ddr4,
                used: true,
                base: 0x40_4000_0000,
                size: 1 << 30,
                tag: "bank1".into(),
            },
        ]
    );
    assert_eq!(x.bank(1).map(|b| b.tag.as_str()), Some("bank1"));
    assert_eq!(x.bank(2), None);

    let cus = x.compute_units();
    let names: Vec<_> = cus.iter().map(|ip| ip.name.as_str()).collect();
    assert_eq!(names, ["vadd:vadd_1", "vadd:vadd_2", "vadd:vadd_3"]);
    assert_eq!(
        *cus[1],
        IpEntry {
            index: 1,
            kind: IpKind::Kernel,
            base: 0x181_0000,
            name: "vadd:vadd_2".into(),
            kernel: "vadd".into(),
            interrupt_enabled: true,
            interrupt_id: 1,
            control: IP_CONTROL_AP_CTRL_HS,
        }
    );
    assert_eq!(
        (cus[2].kernel_name(), cus[2].instance_name()),
        ("vadd", "vadd_3")
    );
    assert_eq!(x.cus_of("vadd"), [0, 1, 2]);
    assert!(x.cus_of("foo").is_empty());

    let kernel = x.kernel("vadd").unwrap();
    let args: Vec<_> = kernel
        .args
        .iter()
        .map(|a| (a.name.as_str(), a.index, a.offset, a.size, a.kind))
        .collect();
    assert_eq!(
        args,
        [
            ("in1", 0, 0x10, 8, ArgKind::Global),
            ("in2", 1, 0x1C, 8, ArgKind::Global),
            ("out_r", 2, 0x28, 8, ArgKind::Global),
            ("size", 3, 0x34, 4, ArgKind::Scalar),
        ]
    );
    assert!(x.kernel("foo").is_none());

    assert_eq!(x.connectivity.len(), 9);
    assert_eq!(
        x.connectivity[3],
        Connection {
            arg_index: 0,
            ip_index: 1,
            bank_index: 1
        }
    );
    assert_eq!(x.arg_bank(0, 0), Some(0));
    assert_eq!(x.arg_bank(1, 2), Some(1));
    assert_eq!(x.arg_bank(2, 1), Some(0));
    assert_eq!(x.arg_bank(0, 3), None);
    assert_eq!(x.arg_bank(3, 0), None);

    // Rebuilding from the parsed values gives the same bytes.
    let mut again = XclbinBuilder::new(x.uuid).mode(x.mode);
    for bank in &x.banks {
        again = again.bank(bank.kind, &bank.tag, bank.base, bank.size);
    }
    again = again.kernel(kernel.clone());
    for cu in &cus {
        again = again.compute_unit(cu.kernel_name(), cu.instance_name(), cu.base);
    }
    for c in &x.connectivity {
        let instance = x.ips[c.ip_index as usize].instance_name();
        again = again.connect(instance, c.arg_index, c.bank_index);
    }
    assert_eq!(again.build(), bytes);
}

#[test]
fn metadata_xml_has_xrt_shape() {
    let bytes = vadd_image();
    let (_, at) = section_at(&bytes, SECTION_EMBEDDED_METADATA);
    let xml = String::from_utf8_lossy(&bytes[at..]);
    assert!(xml.contains("<core name=\"OCL_REGION_0\" target=\"sw_emu\">"));
    assert!(xml.contains(
        "<arg name=\"in1\" addressQualifier=\"1\" id=\"0\" port=\"M_AXI_GMEM\" \
         size=\"0x8\" offset=\"0x10\" hostOffset=\"0x0\" hostSize=\"0x8\" type=\"void*\"/>"
    ));
}

#[test]
fn compute_units_sort_by_interrupt_id_then_base() {
    let ip = |index, interrupt_id, base, name: &str| IpEntry {
        index,
        kind: IpKind::Kernel,
        base,
        name: name.into(),
        kernel: name.split(':').next().unwrap().into(),
        interrupt_enabled: true,
        interrupt_id,
        control: 0,
    };
    let mut x = parse(&vadd_image()).unwrap();
    x.ips = vec![
        ip(0, 2, 0x1000, "k:c"),
        IpEntry {
            kind: IpKind::Mb,
            ..ip(1, 0, 0, "mb")
        },
        ip(2, 0, 0x3000, "k:b"),
        ip(3, 0, 0x2000, "k:a"),
    ];
    let order: Vec<_> = x.compute_units().iter().map(|ip| ip.index).collect();
    assert_eq!(order, [3, 2, 0]);
    assert_eq!(x.cus_of("k"), [0, 1, 2]);
}

#[test]
fn truncated_images_are_refused() {
    let bytes = vadd_image();
    assert_eq!(
        err(&bytes[..100]),
        "truncated: the header needs 456 bytes, the file has 100"
    );
    let len = bytes.len();
    for cut in [SECTION_TABLE_OFFSET + 20, len / 2, len - 1] {
        assert_eq!(
            err(&bytes[..cut]),
            format!("m_length says {len} bytes but the file has {cut}")
        );
    }
    // With m_length patched to the cut, the table and the sections are checked.
    let in_table = with_length(bytes[..SECTION_TABLE_OFFSET + 60].to_vec());
    assert_eq!(
        err(&in_table),
        "truncated: the table of 4 section headers ends at byte 616, past the end of the \
         516-byte file"
    );
    let (_, metadata) = section_at(&bytes, SECTION_EMBEDDED_METADATA);
    let in_section = with_length(bytes[..metadata + 10].to_vec());
    let message = err(&in_section);
    assert!(
        message.starts_with(&format!(
            "section 3 (EMBEDDED_METADATA) at offset {metadata:#x} size "
        )) && message.ends_with(&format!(
            "runs past the end of the {}-byte file",
            metadata + 10
        )),
        "{message}"
    );
}

#[test]
fn bad_magic_is_refused() {
    let mut bytes = vadd_image();
    bytes[..8].copy_from_slice(b"xclbin1\0");
    assert_eq!(
        err(&bytes),
        "bad magic: expected \"xclbin2\\0\", found \"xclbin1\\x00\""
    );
}

#[test]
fn wrong_m_length_is_refused() {
    let mut bytes = vadd_image();
    let len = bytes.len();
    bytes.extend_from_slice(&[0; 8]);
    assert_eq!(
        err(&bytes),
        format!("m_length says {len} bytes but the file has {}", len + 8)
    );
}

#[test]
fn sections_out_of_bounds_are_refused() {
    let bytes = vadd_image();
    let len = bytes.len();
    let (index, _) = section_at(&bytes, SECTION_IP_LAYOUT);
    let header = SECTION_TABLE_OFFSET + index * SECTION_HEADER_SIZE;

    let mut past = bytes.clone();
    put(&mut past, header + 24, &(len as u64 - 8).to_le_bytes());
    let message = err(&past);
    assert!(
        message.starts_with(&format!(
            "section 1 (IP_LAYOUT) at offset {:#x} size ",
            len - 8
        )) && message.ends_with(&format!("runs past the end of the {len}-byte file")),
        "{message}"
    );

    let mut overflow = bytes.clone();
    put(&mut overflow, header + 24, &(u64::MAX - 2).to_le_bytes());
    put(&mut overflow, header + 32, &16u64.to_le_bytes());
    assert_eq!(
        err(&overflow),
        "section 1 (IP_LAYOUT) at offset 0xfffffffffffffffd size 16 overflows a 64-bit file \
         offset"
    );

    let mut table = bytes.clone();
    put(&mut table, HDR_NUM_SECTIONS, &u32::MAX.to_le_bytes());
    assert!(err(&table).contains("the table of 4294967295 section headers"));
}

#[test]
fn missing_and_duplicate_sections_are_refused() {
    let bytes = vadd_image();
    for (kind, name) in [
        (SECTION_MEM_TOPOLOGY, "MEM_TOPOLOGY"),
        (SECTION_IP_LAYOUT, "IP_LAYOUT"),
        (SECTION_CONNECTIVITY, "CONNECTIVITY"),
        (SECTION_EMBEDDED_METADATA, "EMBEDDED_METADATA"),
    ] {
        let (index, _) = section_at(&bytes, kind);
        let mut missing = bytes.clone();
        let header = SECTION_TABLE_OFFSET + index * SECTION_HEADER_SIZE;
        put(&mut missing, header, &SECTION_USER_METADATA.to_le_bytes());
        assert_eq!(err(&missing), format!("no {name} section"));
    }
    let dup = XclbinBuilder::vadd(UUID, 1, 1)
        .section(SECTION_BITSTREAM, "bitstream", vec![1, 2, 3])
        .build();
    let mut dup = dup;
    let header = SECTION_TABLE_OFFSET + 4 * SECTION_HEADER_SIZE;
    put(&mut dup, header, &SECTION_IP_LAYOUT.to_le_bytes());
    assert_eq!(err(&dup), "two IP_LAYOUT sections (table entries 1 and 4)");
}

#[test]
fn bad_counts_are_refused() {
    let bytes = vadd_image();
    let (_, mem) = section_at(&bytes, SECTION_MEM_TOPOLOGY);
    let mut negative = bytes.clone();
    put(&mut negative, mem, &(-1i32).to_le_bytes());
    assert_eq!(
        err(&negative),
        "section MEM_TOPOLOGY: m_count is -1, negative"
    );

    let mut oversized = bytes.clone();
    put(&mut oversized, mem, &3i32.to_le_bytes());
    assert_eq!(
        err(&oversized),
        "section MEM_TOPOLOGY: 3 entries of 40 bytes do not fit in its 88 bytes"
    );
    put(&mut oversized, mem, &i32::MAX.to_le_bytes());
    assert!(err(&oversized).contains("2147483647 entries of 40 bytes do not fit"));

    let (_, conn) = section_at(&bytes, SECTION_CONNECTIVITY);
    let mut conns = bytes.clone();
    put(&mut conns, conn, &10i32.to_le_bytes());
    assert_eq!(
        err(&conns),
        "section CONNECTIVITY: 10 entries of 12 bytes do not fit in its 112 bytes"
    );

    let tiny = XclbinBuilder::vadd(UUID, 1, 1)
        .section(SECTION_IP_LAYOUT, "ip_layout", vec![0; 4])
        .build();
    assert_eq!(
        err(&tiny),
        "section IP_LAYOUT: its 4 bytes cannot hold the 8-byte header"
    );
}

#[test]
fn too_many_compute_units_are_refused() {
    let ips: Vec<IpEntry> = (0..129)
        .map(|i| IpEntry {
            index: i,
            kind: IpKind::Kernel,
            base: u64::from(i) << 16,
            name: format!("vadd:vadd_{i}"),
            kernel: "vadd".into(),
            interrupt_enabled: true,
            interrupt_id: (i % 128) as u8,
            control: 0,
        })
        .collect();
    let bytes = XclbinBuilder::vadd(UUID, 0, 1)
        .section(
            SECTION_IP_LAYOUT,
            "ip_layout",
            table_bytes::<IpLayout, _>(&ips, ip_data),
        )
        .build();
    assert_eq!(
        err(&bytes),
        "IP_LAYOUT has 129 kernel IPs (compute units); the driver supports at most 128"
    );
}

#[test]
fn bad_connectivity_is_refused() {
    let bank = XclbinBuilder::vadd(UUID, 3, 2)
        .connect("vadd_1", 0, 9)
        .build();
    assert_eq!(
        err(&bank),
        "CONNECTIVITY entry 9 names memory bank 9, but MEM_TOPOLOGY has 2"
    );

    let arg = XclbinBuilder::vadd(UUID, 1, 1)
        .connect("vadd_1", 7, 0)
        .build();
    assert_eq!(
        err(&arg),
        "CONNECTIVITY entry 3 names argument 7 of 'vadd:vadd_1', but kernel 'vadd' has no \
         argument with that id"
    );

    let raw = |arg: i32, ip: i32, bank: i32| {
        let mut payload = 1i32.to_le_bytes().to_vec();
        for v in [arg, ip, bank] {
            payload.extend_from_slice(&v.to_le_bytes());
        }
        XclbinBuilder::vadd(UUID, 1, 1)
            .section(SECTION_CONNECTIVITY, "connectivity", payload)
            .build()
    };
    assert_eq!(
        err(&raw(0, 7, 0)),
        "CONNECTIVITY entry 0 names IP 7, but IP_LAYOUT has 1 entries"
    );
    assert_eq!(
        err(&raw(0, -1, 0)),
        "CONNECTIVITY entry 0 names IP -1, but IP_LAYOUT has 1 entries"
    );
    assert_eq!(
        err(&raw(0, 0, -2)),
        "CONNECTIVITY entry 0 names memory bank -2, but MEM_TOPOLOGY has 1"
    );
    assert!(err(&raw(-1, 0, 0)).contains("names argument -1 of 'vadd:vadd_1'"));
    assert!(parse(&raw(3, 0, 0)).is_ok());
}

#[test]
fn kernels_named_past_the_ip_field_have_their_compute_units_named_apart() {
    let meta = |name: &str| KernelMeta {
        name: name.to_owned(),
        ..vadd_meta()
    };
    // Alike for their first 200 characters, as SYCL's mangled names of one program are.
    let stem = format!("_ZTSZZ4mainE{}", "x".repeat(200));
    let (first, second) = (format!("{stem}_add"), format!("{stem}_scale"));
    let kernels = [meta(&first), meta("short"), meta(&second)];
    let image = XclbinBuilder::kernels(UUID, &kernels, b"\0asm\x01\0\0\0".to_vec(), 2).build();
    let x = parse(&image).unwrap();
    let names: Vec<_> = x
        .compute_units()
        .iter()
        .map(|ip| ip.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "~:~0_1",
            "~:~0_2",
            "short:short_1",
            "short:short_2",
            "~:~2_1",
            "~:~2_2"
        ]
    );
    assert_eq!(x.cus_of(&first), [0, 1]);
    assert_eq!(x.cus_of("short"), [2, 3]);
    assert_eq!(x.cus_of(&second), [4, 5]);
    assert!(x.cus_of(ALIASED_KERNEL).is_empty());
    // Every pointer argument of the long kernels' compute units is connected.
    assert_eq!(x.arg_bank(5, 0), Some(0));

    // An alias whose instance no kernel lists is an IP without metadata.
    let stray = XclbinBuilder::vadd(UUID, 1, 1)
        .compute_unit(&"z".repeat(100), "z_1", 0x190_0000)
        .build();
    assert_eq!(
        err(&stray),
        "IP_LAYOUT kernel '~:z_1' has no kernel '~' in EMBEDDED_METADATA"
    );
}

#[test]
fn compute_units_need_metadata_and_unique_names() {
    let foo = XclbinBuilder::vadd(UUID, 1, 1)
        .compute_unit("foo", "foo_1", 0x190_0000)
        .build();
    assert_eq!(
        err(&foo),
        "IP_LAYOUT kernel 'foo:foo_1' has no kernel 'foo' in EMBEDDED_METADATA"
    );
    let twice = XclbinBuilder::vadd(UUID, 1, 1)
        .compute_unit("vadd", "vadd_1", 0x190_0000)
        .build();
    assert_eq!(
        err(&twice),
        "IP_LAYOUT names compute unit 'vadd:vadd_1' twice"
    );
}

#[test]
fn bad_kernel_arguments_are_refused() {
    let with_arg = |offset, size| {
        let mut meta = vadd_meta();
        meta.args.push(KernelArg {
            name: "x".into(),
            index: 4,
            offset,
            size,
            kind: ArgKind::Scalar,
        });
        XclbinBuilder::new(UUID)
            .bank(MemKind::Ddr4, "bank0", 0, 1 << 20)
            .kernel(meta)
            .build()
    };
    assert_eq!(
        err(&with_arg(4, 4)),
        "kernel 'vadd' argument 'x' has offset 0x4, below the argument area at 0x10"
    );
    assert_eq!(
        err(&with_arg(0x3A, 4)),
        "kernel 'vadd' argument 'x' has offset 0x3a, not a multiple of 4"
    );
    assert_eq!(
        err(&with_arg(0x40, 3)),
        "kernel 'vadd' argument 'x' has size 3; expected 4 (scalar) or 8 (pointer or 64-bit \
         scalar), or whole words of a larger scalar value"
    );
    assert_eq!(
        err(&with_arg(0x40, 18)),
        "kernel 'vadd' argument 'x' has size 18; expected 4 (scalar) or 8 (pointer or 64-bit \
         scalar), or whole words of a larger scalar value"
    );
    assert!(parse(&with_arg(0x40, 16)).is_ok());
    assert!(parse(&with_arg(0x40, 8)).is_ok());
}

#[test]
fn local_arguments_travel_as_address_qualifier_3() {
    let mut meta = vadd_meta();
    meta.args.push(KernelArg {
        name: "scratch".into(),
        index: 4,
        offset: 0x40,
        size: 4,
        kind: ArgKind::Local,
    });
    let image = XclbinBuilder::new(UUID)
        .bank(MemKind::Ddr4, "bank0", 0, 1 << 20)
        .kernel(meta.clone())
        .build();
    let parsed = parse(&image).unwrap();
    assert_eq!(parsed.kernels, [meta]);
}

fn with_xml(xml: &str) -> Vec<u8> {
    XclbinBuilder::new(UUID)
        .section(
            SECTION_EMBEDDED_METADATA,
            "metadata",
            xml.as_bytes().to_vec(),
        )
        .build()
}

const ARG: &str = r#"<arg name="a" addressQualifier="1" id="0" size="0x8" offset="0x10"/>"#;

fn doc(kernel_body: &str) -> String {
    format!(
        "<project name=\"p\"><platform><device name=\"fpga0\"><core name=\"c\">\
         <kernel name=\"k\">{kernel_body}</kernel></core></device></platform></project>"
    )
}

#[test]
fn bad_metadata_xml_is_refused() {
    let k = parse(&with_xml(&doc(ARG))).unwrap().kernels;
    assert_eq!(k.len(), 1);
    assert_eq!(k[0].args[0].offset, 0x10);

    let cases: Vec<(String, &str)> = vec![
        (doc(ARG).replace("</core>", ""), "malformed XML"),
        (
            doc(ARG).replace("</project>", ""),
            "element <project> is never closed",
        ),
        (
            "not xml at all".into(),
            "text outside the <project> element",
        ),
        (String::new(), "there is no <project> element"),
        (
            doc(ARG).replace("project", "projet"),
            "root element is <projet>",
        ),
        (format!("{}<project/>", doc(ARG)), "a second root element"),
        (format!("<!DOCTYPE project>{}", doc(ARG)), "DOCTYPE"),
        (
            doc(&ARG.replace("id=\"0\" ", "")),
            "argument 'a' has no id attribute",
        ),
        (
            doc(&ARG.replace("0x10", "0xZZ")),
            "offset=\"0xZZ\" is not a number",
        ),
        (
            doc(&ARG.replace("\"1\"", "\"4\"")),
            "has addressQualifier 4",
        ),
        (
            doc(&ARG.replace("name=\"a\" ", "")),
            "has an <arg> without a name",
        ),
        (doc(&format!("{ARG}{ARG}")), "two arguments with id 0"),
        (
            doc(&ARG.replace("id=\"0\"", "id=\"0\" id=\"1\"")),
            "element <arg>",
        ),
        (doc(&ARG.replace("\"a\"", "\"&bogus;\"")), "element <arg>"),
        (
            doc("").replace("<kernel name=\"k\">", "<kernel>"),
            "a <kernel> has no name",
        ),
        (
            doc("").replace("</core>", "<kernel name=\"k\"/></core>"),
            "kernel 'k' is described twice",
        ),
        (doc("<instance/>"), "kernel 'k' has an unnamed <instance>"),
        (
            doc("<instance name=\"k_1\"/><instance name=\"k_1\"/>"),
            "instance 'k_1' is listed twice",
        ),
    ];
    for (xml, expected) in cases {
        let message = err(&with_xml(&xml));
        assert!(
            message.starts_with("EMBEDDED_METADATA: ") && message.contains(expected),
            "{xml}: {message}"
        );
    }
    let mut bytes = with_xml(&doc(ARG));
    let (_, at) = section_at(&bytes, SECTION_EMBEDDED_METADATA);
    bytes[at + 20] = 0xFF;
    assert!(err(&bytes).contains("not valid UTF-8"));
}

#[test]
fn metadata_accepts_decimal_nul_padding_and_other_elements() {
    let xml = doc(
        r#"<port name="M_AXI_GMEM"/><arg name="n" addressQualifier="0" id="2" size="4" offset="16"/>"#,
    )
    .replace("<platform>", "<platform><kernel name=\"ignored\"/>")
    + "\n\0\0";
    let k = parse(&with_xml(&xml)).unwrap().kernels;
    assert_eq!(
        k,
        [KernelMeta {
            name: "k".into(),
            args: vec![KernelArg {
                name: "n".into(),
                index: 2,
                offset: 0x10,
                size: 4,
                kind: ArgKind::Scalar,
            }],
        }]
    );
}

#[test]
fn zero_uuid_is_refused() {
    let bytes = XclbinBuilder::vadd(Guid::new(0, 0), 1, 1).build();
    assert_eq!(
        err(&bytes),
        "the xclbin uuid (axlf_header.uuid) is all zero"
    );
}

#[test]
fn bad_strings_are_refused() {
    let bytes = vadd_image();
    let (_, mem) = section_at(&bytes, SECTION_MEM_TOPOLOGY);
    let mut tag = bytes.clone();
    let second_tag = mem + MEM_TOPOLOGY_HEADER + MEM_DATA_SIZE + 24;
    tag[second_tag..second_tag + MEM_TAG_SIZE].fill(b'x');
    assert_eq!(
        err(&tag),
        "MEM_TOPOLOGY entry 1 tag is not NUL-terminated within its 16 bytes"
    );

    let (_, ip) = section_at(&bytes, SECTION_IP_LAYOUT);
    let mut name = bytes.clone();
    name[ip + IP_LAYOUT_HEADER + 16] = 0xC3;
    name[ip + IP_LAYOUT_HEADER + 17] = b'(';
    assert_eq!(err(&name), "IP_LAYOUT entry 0 name is not valid UTF-8");
}

#[test]
fn huge_banks_are_refused() {
    let bytes = vadd_image();
    let (_, mem) = section_at(&bytes, SECTION_MEM_TOPOLOGY);
    let mut huge = bytes.clone();
    put(
        &mut huge,
        mem + MEM_TOPOLOGY_HEADER + 8,
        &(u64::MAX / 1024).to_le_bytes(),
    );
    assert!(err(&huge).starts_with("MEM_TOPOLOGY entry 0: base 0x4000000000 and size"));
}

#[test]
fn every_prefix_is_refused_without_panicking() {
    let bytes = XclbinBuilder::vadd(UUID, 1, 1).build();
    assert!(parse(&bytes).is_ok());
    for cut in 0..bytes.len() {
        assert!(parse(&bytes[..cut]).is_err(), "prefix {cut}");
        if cut >= SECTION_TABLE_OFFSET {
            assert!(
                parse(&with_length(bytes[..cut].to_vec())).is_err(),
                "prefix {cut}"
            );
        }
    }
}

#[test]
fn random_byte_flips_never_panic() {
    let bytes = XclbinBuilder::vadd(UUID, 2, 2).build();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut refused = 0;
    for _ in 0..500 {
        let mut mutated = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % bytes.len() as u64) as usize;
            mutated[at] ^= (next() % 255 + 1) as u8;
        }
        refused += usize::from(parse(&mutated).is_err());
    }
    assert!(refused > 0);
}
