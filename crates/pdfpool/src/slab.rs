//! A vector of reusable slots: O(1) insert and remove by index, no hashing.
//!
//! The admission table keeps its jobs and each job's waiters in slabs, so a waiter that gives
//! up finds its own entry by index instead of searching or hashing a key.

/// Slots addressed by index; freed indexes are reused (last freed, first reused).
#[derive(Debug)]
pub(crate) struct Slab<T> {
    entries: Vec<Option<T>>,
    free: Vec<usize>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Stores `value` and returns its index.
    pub(crate) fn insert(&mut self, value: T) -> usize {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            debug_assert!(self.entries[index].is_none());
            self.entries[index] = Some(value);
            index
        } else {
            self.entries.push(Some(value));
            self.entries.len() - 1
        }
    }

    /// Takes the value at `index` out, if there is one.
    pub(crate) fn remove(&mut self, index: usize) -> Option<T> {
        let value = self.entries.get_mut(index)?.take()?;
        self.free.push(index);
        self.len -= 1;
        Some(value)
    }

    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        self.entries.get(index)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.entries.get_mut(index)?.as_mut()
    }

    /// How many slots hold a value.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The stored values, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().flatten()
    }
}

impl<T> IntoIterator for Slab<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Option<T>>>;

    /// The stored values, in index order.
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter().flatten()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_reuses_the_freed_index() {
        let mut slab = Slab::default();
        let a = slab.insert('a');
        let b = slab.insert('b');
        assert_eq!(slab.len(), 2);
        assert_eq!(slab.remove(a), Some('a'));
        assert_eq!(slab.remove(a), None, "a slot is emptied once");
        assert_eq!(slab.len(), 1);
        let c = slab.insert('c');
        assert_eq!(c, a);
        assert_eq!(slab.get(b), Some(&'b'));
        assert_eq!(slab.into_iter().collect::<Vec<_>>(), vec!['c', 'b']);
    }

    #[test]
    fn out_of_range_index_is_none() {
        let mut slab: Slab<u8> = Slab::default();
        assert!(slab.is_empty());
        assert_eq!(slab.remove(7), None);
        assert_eq!(slab.get_mut(7), None);
    }
}
