//! Bounded drives: `strands serve` drives at most `STRANDS_DRIVES` runs at
//! once, whatever waits. A drive holds a session, its spec, a model call
//! in flight; twenty thousand at once were 2.7 GB. So a run started faster
//! than runs are driven, one answered or fired, one left running when the
//! last process stopped, one whose replica died — each waits its turn and
//! takes no memory but its id until driven.
//!
//! Three queues, in this order of turn:
//! 1. **urgent** — runs answered, fired, cancelled or asked again: a person
//!    or a timer is waiting on them;
//! 2. **fresh** — runs this process started, oldest first;
//! 3. **the backlog in the store** — running sessions no process drives,
//!    oldest first ([`crate::store::Backend::unleased_running`]), read a
//!    page the size of the room there is, never all at once. At start-up
//!    that is what the last process left running; on PostgreSQL the
//!    replicas share it through their leases (a run one replica took is
//!    leased, so the next page of another does not list it) and a dead
//!    replica's runs come back into it when their leases lapse.
//!
//! The slots are counted under the same lock as the queues, so a run
//! queued while the last drive ends is never left without one.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// Which queue a run joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Answered, fired, cancelled, asked again.
    Urgent,
    /// Started here.
    Fresh,
    /// Read from the store's backlog: driven only if it still needs it.
    Backlog,
}

/// A run waiting for (or holding) a slot.
pub struct Item {
    pub id: String,
    pub turn: Turn,
    /// A place in another bounded queue (start-up's re-posts), held until
    /// the drive ends.
    pub permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

#[derive(Default)]
struct Queues {
    urgent: VecDeque<Item>,
    fresh: VecDeque<Item>,
    /// Ids in either queue.
    queued: HashSet<String>,
    /// Ids holding a slot.
    driving: HashSet<String>,
}

/// What [`Drives::offer`] did with a run.
#[derive(Debug, PartialEq, Eq)]
pub enum Offered {
    /// It has a slot: the caller drives it now.
    Drive,
    /// It waits its turn.
    Queued,
    /// It is queued or driven already (a drive re-checks the store when
    /// it ends, so nothing recorded meanwhile is left waiting).
    Already,
}

/// The slots and the queues.
pub struct Drives {
    size: usize,
    queues: Mutex<Queues>,
    /// Told whenever a slot frees with nothing queued: the backlog reader
    /// reads its next page.
    room: tokio::sync::Notify,
}

impl Drives {
    /// `size` slots (at least one).
    pub fn new(size: usize) -> Drives {
        Drives {
            size: size.max(1),
            queues: Mutex::default(),
            room: tokio::sync::Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many runs may be driven at once.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Runs driven now.
    pub fn driving(&self) -> usize {
        self.lock().driving.len()
    }

    /// Runs waiting in this process's queues (not the store's backlog).
    pub fn queued(&self) -> usize {
        let q = self.lock();
        q.urgent.len() + q.fresh.len()
    }

    /// The runs driven now (shutdown hands their leases back).
    pub fn driving_ids(&self) -> Vec<String> {
        self.lock().driving.iter().cloned().collect()
    }

    /// Whether this process drives `id` now.
    pub fn is_driving(&self, id: &str) -> bool {
        self.lock().driving.contains(id)
    }

    /// Free slots when nothing is queued here: how many runs of the
    /// store's backlog to read next.
    pub fn room_for_backlog(&self) -> usize {
        let q = self.lock();
        if q.urgent.is_empty() && q.fresh.is_empty() {
            self.size.saturating_sub(q.driving.len())
        } else {
            0
        }
    }

    /// Waits until [`Drives::room_for_backlog`] may have changed.
    pub async fn room_changed(&self) {
        self.room.notified().await
    }

    /// Takes `item`: a slot for it now ([`Offered::Drive`], the item given
    /// back to drive), or a place in its queue.
    pub fn offer(&self, item: Item) -> (Offered, Option<Item>) {
        let mut q = self.lock();
        if q.driving.contains(&item.id) || q.queued.contains(&item.id) {
            return (Offered::Already, None);
        }
        if q.driving.len() < self.size {
            q.driving.insert(item.id.clone());
            return (Offered::Drive, Some(item));
        }
        q.queued.insert(item.id.clone());
        match item.turn {
            Turn::Urgent => q.urgent.push_back(item),
            Turn::Fresh | Turn::Backlog => q.fresh.push_back(item),
        }
        (Offered::Queued, None)
    }

    /// The drive of `id` ended: the next queued run takes its slot (the
    /// caller drives it), or the slot frees.
    pub fn finished(&self, id: &str) -> Option<Item> {
        let next = {
            let mut q = self.lock();
            q.driving.remove(id);
            let next = q.urgent.pop_front().or_else(|| q.fresh.pop_front());
            if let Some(n) = &next {
                q.queued.remove(&n.id);
                q.driving.insert(n.id.clone());
            }
            next
        };
        if next.is_none() {
            // Kept for the reader if it is not waiting yet.
            self.room.notify_one();
        }
        next
    }
}

/// Where the backlog reader is in the store's oldest-first order.
pub type Cursor = Option<(DateTime<Utc>, String)>;

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, turn: Turn) -> Item {
        Item {
            id: id.into(),
            turn,
            permit: None,
        }
    }

    #[test]
    fn never_more_than_its_size_and_urgent_runs_go_first() {
        let d = Drives::new(2);
        assert_eq!(d.offer(item("a", Turn::Fresh)).0, Offered::Drive);
        assert_eq!(d.offer(item("b", Turn::Fresh)).0, Offered::Drive);
        assert_eq!(d.offer(item("c", Turn::Fresh)).0, Offered::Queued);
        assert_eq!(d.offer(item("d", Turn::Urgent)).0, Offered::Queued);
        assert_eq!(d.offer(item("a", Turn::Urgent)).0, Offered::Already);
        assert_eq!(d.offer(item("c", Turn::Urgent)).0, Offered::Already);
        assert_eq!((d.driving(), d.queued(), d.room_for_backlog()), (2, 2, 0));
        let next = d.finished("a").expect("a slot for the next");
        assert_eq!(next.id, "d", "the answered run goes before the started one");
        assert_eq!(d.finished("b").expect("next").id, "c");
        assert!(d.is_driving("c") && d.is_driving("d") && !d.is_driving("a"));
        assert!(d.finished("c").is_none());
        assert_eq!((d.driving(), d.queued(), d.room_for_backlog()), (1, 0, 1));
        // A run whose drive ended may be driven again.
        assert_eq!(d.offer(item("a", Turn::Urgent)).0, Offered::Drive);
    }
}
