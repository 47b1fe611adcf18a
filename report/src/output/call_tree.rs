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

/// An empty tree holds nothing, not even its root (most entries of a report never get a tree):
/// the root is made with the first path.
impl Default for CallTree {
    fn default() -> Self {
        CallTree { nodes: Vec::new(), wide: FxHashMap::default() }
    }
}

impl CallTree {
    /// The children of `node`, in the order they were first reached.
    pub fn children(&self, node: usize) -> Vec<usize> {
        let mut kids = Vec::new();
        let mut at = self.nodes.get(node).map_or(NO_NODE, |n| n.first_child);
        while at != NO_NODE {
            kids.push(at as usize);
            at = self.nodes[at as usize].next_sibling;
        }
        kids.sort_unstable();
        kids
    }

    pub(super) fn add_path(&mut self, path: impl Iterator<Item = FuncId>, period: u64) {
        if self.nodes.is_empty() {
            self.nodes.push(Node::new(u32::MAX));
        }
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

    /// The tree of `paths`, with only the nodes whose weight `shows` keeps (and so nothing
    /// under a node it refuses: no more than its weight), as adding each path in turn and
    /// cutting the rest would make it. Built from the root down, a level at a time: the paths
    /// under a node refused are never walked further. A path is a (sample, frame) pair;
    /// `step(path, d)` gives its `d`th function, `weight` its sample's weight. Siblings keep
    /// the order paths first reach them in. `scratch` is reused from tree to tree.
    pub(super) fn from_paths(
        paths: &mut [(u32, u32)],
        step: impl Fn((u32, u32), usize) -> Option<FuncId>,
        weight: impl Fn(u32) -> u64,
        shows: impl Fn(u64) -> bool,
        scratch: &mut PathScratch,
    ) -> CallTree {
        let period = paths.iter().fold(0u64, |w, p| w.saturating_add(weight(p.0)));
        let mut tree = CallTree { nodes: vec![Node { period, ..Node::new(u32::MAX) }], ..Default::default() };
        // (node, its paths, their depth below it)
        let mut work = vec![(0usize, 0..paths.len(), 0usize)];
        let mut groups: Vec<(FuncId, u64, u32)> = Vec::new();
        while let Some((node, range, depth)) = work.pop() {
            let here = &mut paths[range.clone()];
            scratch.split(here, depth, &step, &weight, &mut groups);
            // Groups in the order their first paths come, which is the order of their
            // samples: the order the functions were first reached in.
            let mut at = range.start;
            for &(func, w, len) in &groups {
                let paths = at..at + len as usize;
                at += len as usize;
                if shows(w) {
                    let child = tree.nodes.len();
                    tree.nodes.push(Node { period: w, ..Node::new(func) });
                    tree.link(node, child as u32);
                    work.push((child, paths, depth + 1));
                }
            }
        }
        tree
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

/// What `CallTree::from_paths` reuses between levels and trees: each function's group at the
/// level being split (by function id; a slot is this split's when the group it names is of
/// that function, so that nothing is cleared between splits), each path's group, and room to
/// regroup paths in.
#[derive(Default)]
pub(super) struct PathScratch {
    slots: Vec<u32>,
    group_of: Vec<u32>,
    moved: Vec<(u32, u32)>,
}

impl PathScratch {
    /// Groups `paths` by their `depth`th function, keeping each group's paths in their order
    /// (a stable counting sort): `groups` gets (function, weight, paths) in the order of each
    /// group's first path, and the paths that end above `depth` go last.
    fn split(
        &mut self,
        paths: &mut [(u32, u32)],
        depth: usize,
        step: impl Fn((u32, u32), usize) -> Option<FuncId>,
        weight: impl Fn(u32) -> u64,
        groups: &mut Vec<(FuncId, u64, u32)>,
    ) {
        const ENDED: u32 = u32::MAX;
        groups.clear();
        self.group_of.clear();
        for &p in paths.iter() {
            let Some(func) = step(p, depth) else {
                self.group_of.push(ENDED);
                continue;
            };
            let f = func as usize;
            if f >= self.slots.len() {
                self.slots.resize(f + 1, ENDED);
            }
            let mut g = self.slots[f];
            if groups.get(g as usize).is_none_or(|group| group.0 != func) {
                g = groups.len() as u32;
                self.slots[f] = g;
                groups.push((func, 0, 0));
            }
            let group = &mut groups[g as usize];
            (group.1, group.2) = (group.1.saturating_add(weight(p.0)), group.2 + 1);
            self.group_of.push(g);
        }
        // Where each group's paths go, then the ended ones.
        let mut next: Vec<u32> =
            groups.iter().scan(0, |at, g| Some(std::mem::replace(at, *at + g.2))).collect();
        let mut ended = groups.iter().map(|g| g.2).sum::<u32>();
        self.moved.clear();
        self.moved.resize(paths.len(), (0, 0));
        for (&p, &g) in paths.iter().zip(&self.group_of) {
            let to = match next.get_mut(g as usize) {
                Some(to) => to,
                None => &mut ended,
            };
            self.moved[*to as usize] = p;
            *to += 1;
        }
        paths.copy_from_slice(&self.moved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree under `n`, less the nodes lighter than `keep`, as `function:weight(children)`.
    fn shape(t: &CallTree, n: usize, keep: u64) -> String {
        let kids = t.children(n).into_iter().filter(|&k| t.nodes[k].period >= keep);
        kids.map(|k| format!("{}:{}({})", t.nodes[k].func, t.nodes[k].period, shape(t, k, keep))).collect()
    }

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
    fn trees_of_paths_keep_the_nodes_shown_as_adding_each_path_does() {
        // Samples' stacks, root first, and weights: main -> {2 (11: callee 9 of 9, callee 7
        // of 1), 3 (1), then wide heavy callees}.
        let mut stacks: Vec<(Vec<FuncId>, u64)> =
            vec![(vec![1, 2, 9], 9), (vec![1, 2, 7], 1), (vec![1, 2], 1), (vec![1, 3], 1)];
        stacks.extend((0..2 * LISTED).map(|f| (vec![1, 100 + f, 5], 10)));
        stacks.push((vec![1, 2, 9], 1));
        let mut whole = CallTree::default();
        for (s, w) in &stacks {
            whole.add_path(s.iter().copied(), *w);
        }
        let mut paths: Vec<(u32, u32)> = (0..stacks.len() as u32).map(|n| (n, 0)).collect();
        let step = |(n, _): (u32, u32), d: usize| stacks[n as usize].0.get(d).copied();
        let mut scratch = PathScratch::default();
        let cut = CallTree::from_paths(&mut paths, step, |n| stacks[n as usize].1, |w| w >= 9, &mut scratch);
        // The same tree, less the light nodes: compared as `function:weight(children)`.
        let main = cut.children(0)[0];
        assert_eq!(shape(&cut, main, 0), shape(&whole, whole.children(0)[0], 9));
        assert_eq!(cut.nodes[0].period, whole.nodes[0].period);
        let under_main: Vec<FuncId> = cut.children(main).iter().map(|&k| cut.nodes[k].func).collect();
        assert_eq!(under_main[0], 2, "siblings in the order first reached; 3 is cut");
        assert_eq!(under_main.len(), 1 + 2 * LISTED as usize);
        // Its wide node still finds each child once.
        let mut more = cut.clone();
        more.add_path([1, 100 + LISTED, 5].into_iter(), 1);
        assert_eq!(more.nodes.len(), cut.nodes.len());
    }

    #[test]
    fn trees_of_many_paths_match_adding_each_path_at_every_cut() {
        // Deep stacks over few functions, so that paths share prefixes, part, and end at
        // every depth (a xorshift makes them the same on every run).
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let stacks: Vec<(Vec<FuncId>, u64)> = (0..3000)
            .map(|_| {
                let depth = 1 + next(12) as usize;
                ((0..depth).map(|d| (next(3 + d as u64) * 7 + d as u64) as FuncId).collect(), 1 + next(5))
            })
            .collect();
        let mut whole = CallTree::default();
        for (s, w) in &stacks {
            whole.add_path(s.iter().copied(), *w);
        }
        let step = |(n, _): (u32, u32), d: usize| stacks[n as usize].0.get(d).copied();
        let mut scratch = PathScratch::default();
        for keep in [0, 1, 5, 40, 300, 2000] {
            let mut paths: Vec<(u32, u32)> = (0..stacks.len() as u32).map(|n| (n, 0)).collect();
            let cut =
                CallTree::from_paths(&mut paths, step, |n| stacks[n as usize].1, |w| w >= keep, &mut scratch);
            assert_eq!(shape(&cut, 0, 0), shape(&whole, 0, keep), "cut at {keep}");
            assert!(cut.nodes[1..].iter().all(|n| n.period >= keep));
        }
    }
}
