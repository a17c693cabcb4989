//! A vector of reusable slots: O(1) insert and remove by index, no hashing.
//!
//! The admission table keeps its jobs and each job's waiters in slabs, so a waiter that gives
//! up finds its own entry by index instead of searching or hashing a key.

/// Slots addressed by index; freed indexes are reused (last freed, first reused).
///
/// Slot 0 lives inline: most jobs have a single waiter (their starter), and the table holds
/// few jobs, so the common case allocates nothing.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    first: Option<T>,
    /// Slots 1.. (slot `i` is `rest[i - 1]`).
    rest: Vec<Option<T>>,
    /// Free slots among 1.. (slot 0 is free when `first` is `None`).
    free: Vec<usize>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self {
            first: None,
            rest: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Stores `value` and returns its index.
    pub(crate) fn insert(&mut self, value: T) -> usize {
        self.len += 1;
        if self.first.is_none() {
            self.first = Some(value);
            0
        } else if let Some(index) = self.free.pop() {
            debug_assert!(self.rest[index - 1].is_none());
            self.rest[index - 1] = Some(value);
            index
        } else {
            self.rest.push(Some(value));
            self.rest.len()
        }
    }

    /// Takes the value at `index` out, if there is one.
    pub(crate) fn remove(&mut self, index: usize) -> Option<T> {
        let value = self.slot_mut(index)?.take()?;
        if index > 0 {
            self.free.push(index);
        }
        self.len -= 1;
        Some(value)
    }

    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        match index {
            0 => self.first.as_ref(),
            _ => self.rest.get(index - 1)?.as_ref(),
        }
    }

    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.slot_mut(index)?.as_mut()
    }

    fn slot_mut(&mut self, index: usize) -> Option<&mut Option<T>> {
        match index {
            0 => Some(&mut self.first),
            _ => self.rest.get_mut(index - 1),
        }
    }

    /// How many slots hold a value.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The lone value, if the slab holds exactly one and it sits in the inline slot (a job's
    /// usual single waiter); otherwise the slab itself.
    pub(crate) fn into_only(self) -> Result<T, Self> {
        match self {
            Self {
                first: Some(value),
                len: 1,
                ..
            } => Ok(value),
            slab => Err(slab),
        }
    }

    /// The stored values, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.first.iter().chain(self.rest.iter().flatten())
    }

    /// The stored values with their indexes, in index order.
    pub(crate) fn iter_indexed(&self) -> impl Iterator<Item = (usize, &T)> {
        let rest = self.rest.iter().enumerate();
        self.first
            .iter()
            .map(|value| (0, value))
            .chain(rest.filter_map(|(position, slot)| Some((position + 1, slot.as_ref()?))))
    }
}

impl<T> IntoIterator for Slab<T> {
    type Item = T;
    type IntoIter = std::iter::Chain<
        std::option::IntoIter<T>,
        std::iter::Flatten<std::vec::IntoIter<Option<T>>>,
    >;

    /// The stored values, in index order.
    fn into_iter(self) -> Self::IntoIter {
        self.first
            .into_iter()
            .chain(self.rest.into_iter().flatten())
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
    fn slots_past_the_inline_one_are_reused_too() {
        let mut slab = Slab::default();
        let indexes: Vec<usize> = (0..4).map(|n| slab.insert(n)).collect();
        assert_eq!(indexes, vec![0, 1, 2, 3]);
        assert_eq!(slab.remove(2), Some(2));
        assert_eq!(slab.remove(0), Some(0));
        assert_eq!(slab.iter().copied().collect::<Vec<_>>(), vec![1, 3]);
        let indexed: Vec<(usize, i32)> = slab.iter_indexed().map(|(i, &v)| (i, v)).collect();
        assert_eq!(indexed, vec![(1, 1), (3, 3)]);
        assert_eq!(slab.insert(10), 0, "the inline slot first");
        assert_eq!(slab.insert(12), 2);
        assert_eq!(slab.insert(14), 4);
        assert_eq!(slab.len(), 5);
        assert_eq!(slab.into_iter().collect::<Vec<_>>(), vec![10, 1, 12, 3, 14]);
    }

    #[test]
    fn into_only_takes_a_lone_inline_value_and_nothing_else() {
        let mut slab = Slab::default();
        slab.insert('a');
        assert_eq!(slab.into_only().ok(), Some('a'));
        let mut slab = Slab::default();
        slab.insert('a');
        slab.insert('b');
        let slab = slab.into_only().expect_err("two values");
        assert_eq!(slab.len(), 2);
        let mut slab = Slab::default();
        slab.insert('a');
        slab.insert('b');
        slab.remove(0);
        let slab = slab.into_only().expect_err("the value is not inline");
        assert_eq!(slab.into_iter().collect::<Vec<_>>(), vec!['b']);
    }

    #[test]
    fn out_of_range_index_is_none() {
        let mut slab: Slab<u8> = Slab::default();
        assert!(slab.is_empty());
        assert_eq!(slab.remove(7), None);
        assert_eq!(slab.get_mut(7), None);
    }
}
