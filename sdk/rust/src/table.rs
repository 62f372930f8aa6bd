//! The device table of `inventory.enumerate` (accel:plugin 0.3.0): each text once, each
//! device a row of numbers. [`TableBuilder`] interns the texts, so a plugin with thousands of
//! devices fills a table without making a string per device.

use std::collections::HashMap;

use crate::bindings::exports::accel::plugin::inventory::{
    DeviceRow, DeviceTable, Fact, NumberedText,
};
use crate::types::Properties;

/// Builds a [`DeviceTable`], saying each text once.
#[derive(Default)]
pub struct TableBuilder {
    texts: Vec<String>,
    index: HashMap<String, u32>,
    last: Option<u32>,
    rows: Vec<DeviceRow>,
    extras: Vec<Fact>,
}

impl TableBuilder {
    /// The index of `text` in the table, adding it the first time.
    pub fn text(&mut self, text: &str) -> u32 {
        // Rows in a row mostly share their prefixes: the last text asked needs no hashing.
        if let Some(last) = self.last
            && self.texts[last as usize] == text
        {
            return last;
        }
        let at = match self.index.get(text) {
            Some(&at) => at,
            None => {
                let at = self.texts.len() as u32;
                self.texts.push(text.to_string());
                self.index.insert(text.to_string(), at);
                at
            }
        };
        self.last = Some(at);
        at
    }

    /// `text` as a [`NumberedText`]: its trailing decimal digits (if they fit a `u32` and have
    /// no leading zero) become the number, so `dfl-port.12` and `dfl-port.13` share the text
    /// `dfl-port.`.
    pub fn numbered(&mut self, text: &str) -> NumberedText {
        let digits = text.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (prefix, number) = text.split_at(text.len() - digits);
        let canonical = number.len() == 1 || !number.starts_with('0');
        match number.parse::<u32>() {
            Ok(number) if canonical => NumberedText {
                text: self.text(prefix),
                number: Some(number),
            },
            _ => NumberedText {
                text: self.text(text),
                number: None,
            },
        }
    }

    /// Adds the facts `extras` and gives where they start and how many there are, for a
    /// row's `extras-first` and `extras-count`.
    pub fn facts(&mut self, extras: impl IntoIterator<Item = Fact>) -> (u32, u32) {
        let first = self.extras.len();
        self.extras.extend(extras);
        (first as u32, (self.extras.len() - first) as u32)
    }

    /// Adds a row made with indices from [`text`](Self::text) and [`facts`](Self::facts).
    pub fn row(&mut self, row: DeviceRow) {
        self.rows.push(row);
    }

    /// Adds the device `token` as `discovery` describes it (for the few devices of a plugin
    /// that are not worth a row of their own making).
    pub fn described(&mut self, token: u64, properties: Properties) {
        let facts: Vec<Fact> = properties
            .extras
            .iter()
            .map(|(key, value)| Fact {
                key: self.text(key),
                value: self.numbered(value),
            })
            .collect();
        let (extras_first, extras_count) = self.facts(facts);
        let row = DeviceRow {
            token,
            object_type: properties.object_type,
            name: self.numbered(&properties.name),
            guid: properties.guid,
            vendor_id: properties.vendor_id,
            device_id: properties.device_id,
            bus_address: properties.bus_address,
            socket_id: properties.socket_id,
            device_type: self.text(&properties.device_type),
            host: self.text(&properties.host),
            num_mmio: properties.num_mmio,
            num_interrupts: properties.num_interrupts,
            accelerator_state: properties.accelerator_state,
            parent: properties.parent,
            extras_first,
            extras_count,
        };
        self.row(row);
    }

    /// The table.
    pub fn finish(self) -> DeviceTable {
        DeviceTable {
            texts: self.texts,
            rows: self.rows,
            extras: self.extras,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_said_once_and_numbers_split_off() {
        let mut table = TableBuilder::default();
        let a = table.numbered("dfl-port.12");
        let b = table.numbered("dfl-port.13");
        assert_eq!(a.text, b.text);
        assert_eq!((a.number, b.number), (Some(12), Some(13)));
        let zero_led = table.numbered("emu:p0d07");
        assert_eq!(zero_led.number, None);
        let too_big = table.numbered("x99999999999");
        assert_eq!(too_big.number, None);
        let plain = table.numbered("fpga");
        assert_eq!(plain.number, None);
        assert_eq!(table.text("fpga"), plain.text);
        let table = table.finish();
        assert_eq!(
            table.texts,
            ["dfl-port.", "emu:p0d07", "x99999999999", "fpga"]
        );
    }
}
