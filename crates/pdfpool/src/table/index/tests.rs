//! proptest: both representations of the index answer every question as a plain map of the
//! live jobs does, over random sequences of inserts and removes (what the table does to them)
//! and lookups. Keys and callers come from small sets so that they collide often.

use std::collections::HashMap;

use proptest::prelude::*;

use super::{Found, Index};

const KEYS: u8 = 5;
const CALLERS: u8 = 5;

#[derive(Debug, Clone)]
enum Op {
    /// A request for `key` by `caller`: `find`, then, if it finds neither, a new live job.
    Admit { key: u8, caller: u8 },
    /// The `n`-th (modulo) live job ends.
    Remove { n: usize },
    /// `by_key` through a borrowed key, and `by_owner`.
    Look { key: u8, caller: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..KEYS, 0..CALLERS).prop_map(|(key, caller)| Op::Admit { key, caller }),
        2 => any::<usize>().prop_map(|n| Op::Remove { n }),
        2 => (0..KEYS + 1, 0..CALLERS + 1).prop_map(|(key, caller)| Op::Look { key, caller }),
    ]
}

/// The plain model: the live jobs' keys and owners in maps of their own.
#[derive(Default)]
struct Model {
    by_key: HashMap<String, u32>,
    by_owner: HashMap<u8, u32>,
}

impl Model {
    fn find(&self, key: &str, caller: u8) -> Found<u32> {
        match self.by_key.get(key) {
            Some(&id) => Found::Key(id),
            None if self.by_owner.contains_key(&caller) => Found::CallerBusy,
            None => Found::Neither,
        }
    }
}

/// Shrunk under Miri (the gate runs this crate's unit tests there), where every case is slow
/// and the regressions file cannot be written.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if cfg!(miri) {
        config.cases = 4;
        config.failure_persistence = None;
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn scan_and_maps_answer_as_a_plain_map(ops in proptest::collection::vec(op(), 1..60)) {
        // The live jobs in the order a slab would list them: a removed job's place is reused.
        let mut live: Vec<Option<(u32, String, u8)>> = Vec::new();
        let mut indexes: [Index<String, u8, u32>; 2] = [Index::Scan, Index::maps()];
        let mut model = Model::default();
        let mut next_id = 0;
        for op in ops {
            let triples = || live.iter().flatten().map(|(id, key, owner)| (*id, key, owner));
            match op {
                Op::Admit { key, caller } => {
                    let key = key.to_string();
                    let expected = model.find(&key, caller);
                    for index in &indexes {
                        prop_assert_eq!(index.find(triples(), &key, &caller), expected);
                    }
                    if expected == Found::Neither {
                        let id = next_id;
                        next_id += 1;
                        for index in &mut indexes {
                            index.insert(&key, &caller, id);
                        }
                        model.by_key.insert(key.clone(), id);
                        model.by_owner.insert(caller, id);
                        let entry = Some((id, key, caller));
                        match live.iter_mut().find(|place| place.is_none()) {
                            Some(place) => *place = entry,
                            None => live.push(entry),
                        }
                    }
                }
                Op::Remove { n } => {
                    let count = live.iter().flatten().count();
                    if count == 0 {
                        continue;
                    }
                    let place = live
                        .iter_mut()
                        .filter(|place| place.is_some())
                        .nth(n % count)
                        .expect("n % count is a live job");
                    let (id, key, owner) = place.take().expect("a live job");
                    for index in &mut indexes {
                        index.remove(&key, &owner, id);
                    }
                    model.by_key.remove(&key);
                    model.by_owner.remove(&owner);
                }
                Op::Look { key, caller } => {
                    let key = key.to_string();
                    for index in &indexes {
                        let by_key = index.by_key(triples(), key.as_str());
                        prop_assert_eq!(by_key, model.by_key.get(&key).copied());
                        let by_owner = index.by_owner(triples(), &caller);
                        prop_assert_eq!(by_owner, model.by_owner.get(&caller).copied());
                    }
                }
            }
            for index in &indexes {
                index.check(live.iter().flatten().map(|(id, key, owner)| (*id, key, owner)));
            }
        }
    }
}

#[test]
fn a_small_table_scans_and_a_large_one_uses_maps() {
    let small = Index::<u8, u8, u32>::new(super::SCAN_LIMIT);
    if crate::fast::REFERENCE {
        assert!(
            matches!(small, Index::Maps { .. }),
            "the reference build uses maps"
        );
    } else {
        assert!(matches!(small, Index::Scan));
    }
    assert!(matches!(
        Index::<u8, u8, u32>::new(super::SCAN_LIMIT + 1),
        Index::Maps { .. }
    ));
}
