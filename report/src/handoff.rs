//! The hand-off between the thread that reads records and the one that converts them: a
//! bounded queue where a side that waits is woken only once there is a good deal for it to
//! do, not at every item. Whichever side is faster waits at each hand-off, and waking a
//! waiting thread is a system call and a switch on both cores: with a queue several batches
//! deep, one wake-up lets the faster side go on for several batches.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The side that puts items in.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// The side that takes items out.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    /// Signalled when the queue has room again.
    room: Condvar,
    /// Signalled when the queue has items again (or the sender went away).
    filled: Condvar,
    /// The most items queued.
    capacity: usize,
    /// A waiting sender is woken once the queue is down to this many items.
    wake_sender_at: usize,
    /// A waiting receiver is woken once the queue holds this many items.
    wake_receiver_at: usize,
}

struct State<T> {
    queue: VecDeque<T>,
    sender_waits: bool,
    receiver_waits: bool,
    sender_gone: bool,
    receiver_gone: bool,
}

/// A queue of at most `capacity` items (at least 1).
pub fn queue<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let capacity = capacity.max(1);
    let state = State {
        queue: VecDeque::with_capacity(capacity),
        sender_waits: false,
        receiver_waits: false,
        sender_gone: false,
        receiver_gone: false,
    };
    let shared = Arc::new(Shared {
        state: Mutex::new(state),
        room: Condvar::new(),
        filled: Condvar::new(),
        capacity,
        wake_sender_at: (capacity - 1) / 2,
        wake_receiver_at: capacity.div_ceil(2),
    });
    (Sender { shared: shared.clone() }, Receiver { shared })
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T> Sender<T> {
    /// Queues `item`, waiting while the queue is full; gives it back if the receiver went away.
    pub fn send(&self, item: T) -> Result<(), T> {
        let shared = &*self.shared;
        let mut state = shared.lock();
        while state.queue.len() >= shared.capacity && !state.receiver_gone {
            state.sender_waits = true;
            state = shared.room.wait(state).unwrap_or_else(|e| e.into_inner());
            state.sender_waits = false;
        }
        if state.receiver_gone {
            return Err(item);
        }
        state.queue.push_back(item);
        let wake = state.receiver_waits && state.queue.len() >= shared.wake_receiver_at;
        if wake {
            state.receiver_waits = false;
        }
        drop(state);
        if wake {
            shared.filled.notify_one();
        }
        Ok(())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.shared.lock().sender_gone = true;
        self.shared.filled.notify_one();
    }
}

impl<T> Receiver<T> {
    /// The next item, waiting for one; None once the queue is empty and the sender gone.
    pub fn recv(&self) -> Option<T> {
        let shared = &*self.shared;
        let mut state = shared.lock();
        loop {
            if let Some(item) = state.queue.pop_front() {
                let wake = state.sender_waits && state.queue.len() <= shared.wake_sender_at;
                if wake {
                    state.sender_waits = false;
                }
                drop(state);
                if wake {
                    shared.room.notify_one();
                }
                return Some(item);
            }
            if state.sender_gone {
                return None;
            }
            state.receiver_waits = true;
            state = shared.filled.wait(state).unwrap_or_else(|e| e.into_inner());
            state.receiver_waits = false;
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.shared.lock().receiver_gone = true;
        self.shared.room.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_arrives_once_in_order_whichever_side_is_faster() {
        for (capacity, slow_sender) in [(1, false), (2, true), (4, false), (8, true), (8, false)] {
            let (tx, rx) = queue::<u32>(capacity);
            let sending = std::thread::spawn(move || {
                for i in 0..2000 {
                    if slow_sender && i % 100 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    tx.send(i).unwrap();
                }
            });
            let mut got = Vec::new();
            while let Some(i) = rx.recv() {
                if !slow_sender && i % 100 == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                got.push(i);
            }
            sending.join().unwrap();
            assert_eq!(got, (0..2000).collect::<Vec<_>>(), "capacity {capacity}");
        }
    }

    #[test]
    fn a_sender_waiting_on_a_full_queue_gets_its_item_back_when_the_receiver_goes() {
        let (tx, rx) = queue::<u32>(2);
        let sending = std::thread::spawn(move || (0..10).map(|i| tx.send(i)).collect::<Vec<_>>());
        assert_eq!(rx.recv(), Some(0));
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(rx);
        let sent = sending.join().unwrap();
        let refused = sent.iter().position(Result::is_err).expect("a send refused");
        assert!(refused <= 4, "{sent:?}");
        assert!(sent[refused..].iter().all(Result::is_err), "{sent:?}");
    }

    #[test]
    fn the_items_left_are_taken_after_the_sender_went() {
        let (tx, rx) = queue::<u32>(8);
        tx.send(1).unwrap();
        drop(tx);
        assert_eq!(rx.recv(), Some(1));
        assert_eq!(rx.recv(), None);
    }
}
