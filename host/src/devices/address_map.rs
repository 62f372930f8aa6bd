//! Device address ranges and what backs them, as the emulators translate DMA addresses.

use std::collections::BTreeMap;

/// Non-overlapping ranges `[start, start + len)` of a device address space, each with a value
/// (the memory behind it). The emulators translate the addresses a device is told to read or
/// write through one of these, as an IOMMU would.
#[derive(Debug)]
pub struct AddressMap<V> {
    ranges: BTreeMap<u64, (u64, V)>,
}

impl<V> Default for AddressMap<V> {
    fn default() -> Self {
        AddressMap {
            ranges: BTreeMap::new(),
        }
    }
}

impl<V> AddressMap<V> {
    /// Maps `[start, start + len)` to `value`, replacing a range that started at `start`.
    pub fn insert(&mut self, start: u64, len: u64, value: V) -> Option<V> {
        self.ranges.insert(start, (len, value)).map(|(_, v)| v)
    }

    /// Unmaps the range starting at `start`.
    pub fn remove(&mut self, start: u64) -> Option<V> {
        self.ranges.remove(&start).map(|(_, v)| v)
    }

    /// The range starting at `start`.
    pub fn get(&self, start: u64) -> Option<&V> {
        self.ranges.get(&start).map(|(_, v)| v)
    }

    /// The range that holds all of `[address, address + len)`: its value, the offset of
    /// `address` into it, and its start. `None` when no single range holds it all.
    pub fn find(&self, address: u64, len: u64) -> Option<(&V, u64, u64)> {
        let (&start, (range_len, value)) = self.ranges.range(..=address).next_back()?;
        let offset = address - start;
        (offset.checked_add(len)? <= *range_len).then_some((value, offset, start))
    }

    /// Every range, by start: `(start, len, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, &V)> {
        self.ranges
            .iter()
            .map(|(&start, (len, v))| (start, *len, v))
    }

    /// Unmaps every range.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_ranges_that_hold_the_whole_access() {
        let mut map = AddressMap::default();
        map.insert(0x1000, 0x100, 'a');
        map.insert(0x2000, 0x1000, 'b');
        assert_eq!(map.find(0x1000, 0x100), Some((&'a', 0, 0x1000)));
        assert_eq!(map.find(0x10f0, 0x10), Some((&'a', 0xf0, 0x1000)));
        assert_eq!(map.find(0x10f0, 0x11), None, "runs past the end");
        assert_eq!(map.find(0x1100, 1), None, "the gap");
        assert_eq!(map.find(0xfff, 1), None, "below every range");
        assert_eq!(map.find(0x2fff, 1), Some((&'b', 0xfff, 0x2000)));
        assert_eq!(map.find(0x2000, u64::MAX), None, "no overflow");
        assert_eq!(map.remove(0x2000), Some('b'));
        assert_eq!(map.find(0x2000, 1), None);
        assert_eq!(map.iter().count(), 1);
    }
}
