//! `cxl`: the CAPI decoders of `devices::cxl::abi` on arbitrary bytes, each checked against
//! its encoder where there is one:
//!
//! - the input as a `read()` buffer: [`parse_event`] and [`parse_events`];
//! - the input as text, whole and line by line: the sysfs parsers ([`parse_mode`],
//!   [`parse_modes_supported`], [`parse_caia_version`], [`parse_cr_id`], [`parse_afu_name`],
//!   [`parse_card_name`]);
//! - every 8 bytes as a u64: [`memcpy::decode_wed`] and [`AfuDescriptor::decode`];
//! - every 32 bytes as a memcpy [`WorkElement`](memcpy::WorkElement), and every 64 as a
//!   [`StartWorkArg`] to validate.

use accelhost::families::cxl::ContextKind;
use accelhost::families::cxl::abi::{
    AfuDescriptor, StartWorkArg, afu_name, encode_event, memcpy, mode_name, parse_afu_name,
    parse_caia_version, parse_card_name, parse_cr_id, parse_event, parse_events, parse_mode,
    parse_modes_supported,
};

/// Runs every decoder over `data`.
pub fn run(data: &[u8]) {
    events(data);
    let text = String::from_utf8_lossy(data);
    sysfs_text(&text);
    for line in text.lines() {
        sysfs_text(line);
    }
    for word in data.as_chunks::<8>().0 {
        words(u64::from_le_bytes(*word));
    }
    for bytes in data.as_chunks::<{ memcpy::WE_SIZE as usize }>().0 {
        let element = memcpy::WorkElement::decode(bytes);
        assert_eq!(memcpy::WorkElement::decode(&element.encode()), element);
        assert_eq!(element.command(), element.cmd & memcpy::CMD_MASK);
    }
    for chunk in data.as_chunks::<64>().0 {
        start_work(chunk);
    }
}

fn events(data: &[u8]) {
    if let Ok((pe, event)) = parse_event(data) {
        let pe = u16::try_from(pe).expect("the process element is a u16 field");
        assert_eq!(
            parse_event(&encode_event(pe, &event)),
            Ok((u32::from(pe), event))
        );
    }
    let all = parse_events(data);
    assert!(
        all.len() <= data.len() / 8 + 1,
        "an event is at least a header"
    );
}

fn sysfs_text(text: &str) {
    if let Some(mode) = parse_mode(text) {
        assert_eq!(parse_mode(mode_name(mode)), Some(mode));
    }
    if let Some(modes) = parse_modes_supported(text) {
        assert!(modes.len() <= 2, "two modes exist, each listed once");
    }
    let _ = parse_caia_version(text);
    let _ = parse_cr_id(text);
    if let Some((card, slice, kind)) = parse_afu_name(text) {
        let suffix = match kind {
            None => "",
            Some(ContextKind::Master) => "m",
            Some(ContextKind::Slave) => "s",
            Some(ContextKind::Dedicated) => "d",
        };
        let name = format!("{}{suffix}", afu_name(card, slice));
        assert_eq!(parse_afu_name(&name), Some((card, slice, kind)));
    }
    let _ = parse_card_name(text);
}

fn words(word: u64) {
    let (queue, depth) = memcpy::decode_wed(word);
    assert_eq!(
        memcpy::wed(queue, depth),
        word,
        "a WED is its queue and depth"
    );
    let descriptor = AfuDescriptor::decode(word);
    assert_eq!(AfuDescriptor::decode(descriptor.encode()), descriptor);
    let _ = descriptor.modes();
}

fn start_work(chunk: &[u8]) {
    let u64_at = |at: usize| u64::from_le_bytes(chunk[at..at + 8].try_into().expect("8 bytes"));
    let arg = StartWorkArg {
        flags: u64_at(0),
        work_element_descriptor: u64_at(8),
        amr: u64_at(16),
        num_interrupts: i16::from_le_bytes([chunk[24], chunk[25]]),
        tid: u16::from_le_bytes([chunk[26], chunk[27]]),
        reserved1: i32::from_le_bytes(chunk[28..32].try_into().expect("4 bytes")),
        reserved2: u64_at(32),
        reserved3: u64_at(40),
        reserved4: u64_at(48),
        reserved5: u64_at(56),
    };
    let _ = arg.validate();
}
