//! A slab of objects addressed by (index, generation) keys. A key outlives its object safely:
//! once the slot is freed its generation moves on, so the old key finds nothing instead of
//! whatever took the slot next.

/// An address in a [`HandleTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HandleKey {
    index: u32,
    generation: u32,
}

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// The table. Freed slots are reused, each time with a new generation.
pub struct HandleTable<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    capacity: usize,
}

/// The table is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the handle table is full ({0} entries)")]
pub struct TableFull(pub usize);

impl<T> HandleTable<T> {
    /// A table that holds at most `capacity` live entries.
    pub fn with_capacity(capacity: usize) -> Self {
        HandleTable {
            slots: Vec::new(),
            free: Vec::new(),
            capacity,
        }
    }

    pub fn insert(&mut self, value: T) -> Result<HandleKey, TableFull> {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return Ok(HandleKey {
                index,
                generation: slot.generation,
            });
        }
        if self.slots.len() >= self.capacity {
            return Err(TableFull(self.capacity));
        }
        let index = self.slots.len() as u32;
        self.slots.push(Slot {
            generation: 0,
            value: Some(value),
        });
        Ok(HandleKey {
            index,
            generation: 0,
        })
    }

    #[cfg(test)]
    pub fn get(&self, key: HandleKey) -> Option<&T> {
        self.slots
            .get(key.index as usize)
            .filter(|slot| slot.generation == key.generation)
            .and_then(|slot| slot.value.as_ref())
    }

    pub fn remove(&mut self, key: HandleKey) -> Option<T> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.generation != key.generation {
            return None;
        }
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(key.index);
        Some(value)
    }

    /// Removes every entry for which `remove` says so, returning them.
    pub fn drain_where(&mut self, mut remove: impl FnMut(&T) -> bool) -> Vec<T> {
        let keys: Vec<HandleKey> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.value.as_ref().is_some_and(&mut remove))
            .map(|(index, slot)| HandleKey {
                index: index as u32,
                generation: slot.generation,
            })
            .collect();
        keys.into_iter()
            .filter_map(|key| self.remove(key))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_keys_find_nothing_after_reuse() {
        let mut table = HandleTable::with_capacity(4);
        let a = table.insert("a").unwrap();
        assert_eq!(table.get(a), Some(&"a"));
        assert_eq!(table.remove(a), Some("a"));
        let b = table.insert("b").unwrap();
        assert_eq!(a.index, b.index, "the slot is reused");
        assert_eq!(table.get(a), None, "with a new generation");
        assert_eq!(table.remove(a), None);
        assert_eq!(table.get(b), Some(&"b"));
    }

    #[test]
    fn capacity_is_enforced() {
        let mut table = HandleTable::with_capacity(2);
        let a = table.insert(1).unwrap();
        table.insert(2).unwrap();
        assert_eq!(table.insert(3), Err(TableFull(2)));
        table.remove(a);
        assert!(table.insert(3).is_ok());
        assert!(table.insert(4).is_err());
    }

    #[test]
    fn drain_where_removes_matching_entries() {
        let mut table = HandleTable::with_capacity(8);
        let keys: Vec<_> = (0..6).map(|i| table.insert(i).unwrap()).collect();
        let mut drained = table.drain_where(|v| v % 2 == 0);
        drained.sort();
        assert_eq!(drained, vec![0, 2, 4]);
        assert_eq!(table.get(keys[1]), Some(&1));
        assert_eq!(table.get(keys[2]), None);
    }
}
