//! Call trees: the paths of a report entry's samples, merged from where the entry's graph
//! starts (its callers' or callees' end), each node with the weight through it.

use rustc_hash::FxHashMap;

use crate::resolve::FuncId;

/// A call-graph node. Its children are a list through the nodes themselves, so that a tree of
/// any size is one allocation (call trees of deep stacks hold millions of nodes); the list is
/// kept most recently reached first, where the next path most likely goes. Nodes are numbered
/// in the order they were first reached.
#[derive(Clone, Debug)]
pub struct Node {
    /// The function (`u32::MAX` for the root).
    pub func: FuncId,
    /// Event count through this node.
    pub period: u64,
    first_child: u32,
    next_sibling: u32,
    /// Children.
    kids: u32,
}

/// No node.
const NO_NODE: u32 = u32::MAX;

impl Node {
    fn new(func: FuncId) -> Node {
        Node { func, period: 0, first_child: NO_NODE, next_sibling: NO_NODE, kids: 0 }
    }
}

/// A call tree with a virtual root.
#[derive(Clone, Debug)]
pub struct CallTree {
    /// Nodes; 0 is the root.
    pub nodes: Vec<Node>,
    /// The children of nodes with more than `LISTED` of them, by (parent, function): a
    /// function called from many places (an allocator, the callers of a hot leaf) has
    /// thousands, and walking their list had been a sixth of `report -g`.
    wide: FxHashMap<(u32, FuncId), u32>,
}

/// The most children a node has before they are found through `CallTree::wide`.
const LISTED: u32 = 8;

impl Default for CallTree {
    fn default() -> Self {
        CallTree { nodes: vec![Node::new(u32::MAX)], wide: FxHashMap::default() }
    }
}

impl CallTree {
    /// The children of `node`, in the order they were first reached.
    pub fn children(&self, node: usize) -> Vec<usize> {
        let mut kids = Vec::new();
        let mut at = self.nodes[node].first_child;
        while at != NO_NODE {
            kids.push(at as usize);
            at = self.nodes[at as usize].next_sibling;
        }
        kids.sort_unstable();
        kids
    }

    pub(super) fn add_path(&mut self, path: impl Iterator<Item = FuncId>, period: u64) {
        let mut at = 0usize;
        self.nodes[0].period = self.nodes[0].period.saturating_add(period);
        for func in path {
            let next = self.child(at, func);
            self.nodes[next].period = self.nodes[next].period.saturating_add(period);
            at = next;
        }
    }

    /// The child of `parent` for `func`, made when there is none; either way it moves to the
    /// front of the parent's list.
    fn child(&mut self, parent: usize, func: FuncId) -> usize {
        if self.nodes[parent].kids > LISTED {
            if let Some(&at) = self.wide.get(&(parent as u32, func)) {
                return at as usize;
            }
            let at = self.push_child(parent, func);
            self.wide.insert((parent as u32, func), at as u32);
            return at;
        }
        let first = self.nodes[parent].first_child;
        let (mut prev, mut at) = (NO_NODE, first);
        while at != NO_NODE && self.nodes[at as usize].func != func {
            prev = at;
            at = self.nodes[at as usize].next_sibling;
        }
        if at == NO_NODE {
            let at = self.push_child(parent, func);
            if self.nodes[parent].kids > LISTED {
                let mut kid = self.nodes[parent].first_child;
                while kid != NO_NODE {
                    self.wide.insert((parent as u32, self.nodes[kid as usize].func), kid);
                    kid = self.nodes[kid as usize].next_sibling;
                }
            }
            return at;
        } else if prev != NO_NODE {
            self.nodes[prev as usize].next_sibling = self.nodes[at as usize].next_sibling;
            self.nodes[at as usize].next_sibling = first;
        } else {
            return at as usize;
        }
        self.nodes[parent].first_child = at;
        at as usize
    }

    /// The tree without the nodes whose weight `keep` refuses and what is under them (no
    /// more than their weight); nodes keep their order.
    pub(super) fn pruned(&self, keep: impl Fn(u64) -> bool) -> CallTree {
        let mut out = CallTree { nodes: Vec::new(), wide: FxHashMap::default() };
        // A node comes after its parent: a node is kept once its parent was.
        let mut index = vec![NO_NODE; self.nodes.len()];
        index[0] = 0;
        for (k, node) in self.nodes.iter().enumerate() {
            if index[k] == NO_NODE {
                continue;
            }
            index[k] = out.nodes.len() as u32;
            out.nodes.push(Node::new(node.func));
            out.nodes[index[k] as usize].period = node.period;
            let mut kid = node.first_child;
            while kid != NO_NODE {
                if keep(self.nodes[kid as usize].period) {
                    index[kid as usize] = 0;
                }
                kid = self.nodes[kid as usize].next_sibling;
            }
        }
        for (k, node) in self.nodes.iter().enumerate().filter(|(k, _)| index[*k] != NO_NODE) {
            let mut kid = node.first_child;
            while kid != NO_NODE {
                if index[kid as usize] != NO_NODE {
                    out.link(index[k] as usize, index[kid as usize]);
                }
                kid = self.nodes[kid as usize].next_sibling;
            }
        }
        out
    }

    /// Makes `child` a child of `parent`, at the front of its list.
    fn link(&mut self, parent: usize, child: u32) {
        self.nodes[child as usize].next_sibling = self.nodes[parent].first_child;
        self.nodes[parent].first_child = child;
        self.nodes[parent].kids += 1;
        if self.nodes[parent].kids == LISTED + 1 {
            let mut kid = self.nodes[parent].first_child;
            while kid != NO_NODE {
                self.wide.insert((parent as u32, self.nodes[kid as usize].func), kid);
                kid = self.nodes[kid as usize].next_sibling;
            }
        } else if self.nodes[parent].kids > LISTED {
            self.wide.insert((parent as u32, self.nodes[child as usize].func), child);
        }
    }

    /// A new child of `parent`, at the front of its list.
    fn push_child(&mut self, parent: usize, func: FuncId) -> usize {
        let at = self.nodes.len();
        let first = self.nodes[parent].first_child;
        self.nodes.push(Node { next_sibling: first, ..Node::new(func) });
        self.nodes[parent].first_child = at as u32;
        self.nodes[parent].kids += 1;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_nodes_find_their_children_through_the_index() {
        let mut tree = CallTree::default();
        // Node 0's child 100 gets 3 * LISTED children, each reached twice, in two orders.
        for round in 0..2u64 {
            for i in 0..3 * LISTED {
                let f = if round == 0 { i } else { 3 * LISTED - 1 - i };
                tree.add_path([100, f].into_iter(), 1 + u64::from(f));
            }
        }
        let top = tree.children(0);
        assert_eq!(top.len(), 1);
        let kids = tree.children(top[0]);
        assert_eq!(kids.len(), 3 * LISTED as usize, "each function is one child");
        // In the order first reached, each with both rounds' counts.
        for (i, &k) in kids.iter().enumerate() {
            assert_eq!((tree.nodes[k].func, tree.nodes[k].period), (i as u32, 2 * (1 + i as u64)));
        }
        assert_eq!(tree.nodes[top[0]].period, tree.nodes[0].period);
    }

    #[test]
    fn pruning_keeps_the_nodes_shown_in_their_order() {
        let mut tree = CallTree::default();
        // main -> {2 (weight 11: callee 9 of 9, callee 7 of 1), 3 (1), then wide heavy callees}.
        tree.add_path([1, 2, 9].into_iter(), 9);
        tree.add_path([1, 2, 7].into_iter(), 1);
        tree.add_path([1, 2].into_iter(), 1);
        tree.add_path([1, 3].into_iter(), 1);
        for f in 0..2 * LISTED {
            tree.add_path([1, 100 + f, 5].into_iter(), 10);
        }
        let cut = tree.pruned(|w| w >= 9);
        let main = cut.children(0);
        assert_eq!(main.len(), 1);
        let kids: Vec<FuncId> = cut.children(main[0]).iter().map(|&k| cut.nodes[k].func).collect();
        let mut expected = vec![2];
        expected.extend(100..100 + 2 * LISTED);
        assert_eq!(kids, expected, "the heavy callees, in the order first reached; 3 is cut");
        let a = cut.children(main[0])[0];
        let under_a: Vec<FuncId> = cut.children(a).iter().map(|&k| cut.nodes[k].func).collect();
        assert_eq!((under_a, cut.nodes[a].period), (vec![9], 11), "7 is cut, the weights stay");
        // Its wide node still finds each child once.
        let mut more = cut.clone();
        more.add_path([1, 100 + LISTED, 5].into_iter(), 1);
        assert_eq!(more.nodes.len(), cut.nodes.len());
    }
}
