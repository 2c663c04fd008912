//! An order-statistic B+tree: a sequence of `Copy` elements addressed by
//! rank, with every element in the leaves and each inner node keeping the
//! size and the first element of each child.
//!
//! The tree knows nothing of how elements are ordered: the sorted set finds
//! a position with [`Tree::partition_point`] (a monotone predicate over
//! elements, answered in O(log n) from the children's first elements) and
//! then inserts or removes by rank, which only needs the sizes. That keeps
//! the structure small and lets the same code serve score and lex ranges.
//!
//! Costs: `get`, `insert_at`, `remove_at`, `partition_point` O(log n);
//! `remove_range` O(log n + k); iteration O(1) amortised per element.

use smallvec::SmallVec;

/// Most elements a leaf holds before it splits.
const LEAF_MAX: usize = 64;
/// Most children an inner node holds before it splits.
const INNER_MAX: usize = 64;
/// A node with fewer entries than this is merged with a neighbour.
const LEAF_MIN: usize = LEAF_MAX / 4;
const INNER_MIN: usize = INNER_MAX / 4;
/// Fill of the nodes [`Tree::from_sorted`] builds: dense, with some room
/// so the first inserts do not split every node.
const LEAF_FILL: usize = LEAF_MAX * 7 / 8;
const INNER_FILL: usize = INNER_MAX * 7 / 8;

#[derive(Clone, Debug)]
enum Node<T> {
    Leaf(Vec<T>),
    Inner(Vec<Child<T>>),
}

#[derive(Clone, Debug)]
struct Child<T> {
    /// Elements in the subtree.
    len: usize,
    /// Its first element (what `partition_point` compares against).
    min: T,
    node: Box<Node<T>>,
}

impl<T: Copy> Node<T> {
    fn fanout(&self) -> usize {
        match self {
            Node::Leaf(v) => v.len(),
            Node::Inner(c) => c.len(),
        }
    }

    fn underfull(&self) -> bool {
        match self {
            Node::Leaf(v) => v.len() < LEAF_MIN,
            Node::Inner(c) => c.len() < INNER_MIN,
        }
    }

    fn overfull(&self) -> bool {
        match self {
            Node::Leaf(v) => v.len() > LEAF_MAX,
            Node::Inner(c) => c.len() > INNER_MAX,
        }
    }

    /// First element; None for an empty node.
    fn min(&self) -> Option<T> {
        match self {
            Node::Leaf(v) => v.first().copied(),
            Node::Inner(c) => c.first().map(|c| c.min),
        }
    }

    fn len(&self) -> usize {
        match self {
            Node::Leaf(v) => v.len(),
            Node::Inner(c) => c.iter().map(|c| c.len).sum(),
        }
    }

    /// Splits off the upper half into a new node (after a merge made this
    /// one overfull), leaving no more capacity than a node may fill.
    fn split(&mut self) -> Node<T> {
        match self {
            Node::Leaf(v) => {
                let upper = v.split_off(v.len() / 2);
                v.shrink_to(LEAF_MAX);
                Node::Leaf(upper)
            }
            Node::Inner(c) => {
                let upper = c.split_off(c.len() / 2);
                c.shrink_to(INNER_MAX);
                Node::Inner(upper)
            }
        }
    }

    /// Appends `other` (a node of the same height) to this one.
    fn absorb(&mut self, other: Node<T>) {
        match (self, other) {
            (Node::Leaf(a), Node::Leaf(b)) => {
                a.reserve_exact(b.len());
                a.extend(b)
            }
            (Node::Inner(a), Node::Inner(b)) => {
                a.reserve_exact(b.len());
                a.extend(b)
            }
            // Siblings always have the same height.
            _ => unreachable!("merging nodes of different heights"),
        }
    }

    /// Calls `f` on every element, in order.
    fn for_each(&self, f: &mut impl FnMut(T)) {
        match self {
            Node::Leaf(v) => v.iter().for_each(|&x| f(x)),
            Node::Inner(c) => c.iter().for_each(|c| c.node.for_each(f)),
        }
    }

    /// Heap bytes of this node's own storage and its descendants'.
    fn heap_size(&self) -> usize {
        match self {
            Node::Leaf(v) => v.capacity() * std::mem::size_of::<T>(),
            Node::Inner(c) => {
                c.capacity() * std::mem::size_of::<Child<T>>()
                    + c.iter()
                        .map(|c| std::mem::size_of::<Node<T>>() + c.node.heap_size())
                        .sum::<usize>()
            }
        }
    }
}

impl<T: Copy> Child<T> {
    fn new(node: Node<T>) -> Option<Child<T>> {
        Some(Child {
            len: node.len(),
            min: node.min()?,
            node: Box::new(node),
        })
    }

    /// Recomputes `len` and `min` after the subtree changed.
    fn refresh(&mut self, len: usize) {
        self.len = len;
        if let Some(m) = self.node.min() {
            self.min = m;
        }
    }
}

/// Index of the child holding rank `rank` (for an insertion, a rank equal
/// to a child's end goes to that child), and the rank within it.
fn locate<T>(children: &[Child<T>], mut rank: usize, inserting: bool) -> (usize, usize) {
    let last = children.len() - 1;
    for (i, c) in children.iter().enumerate() {
        if rank < c.len || (inserting && rank == c.len) || i == last {
            return (i, rank);
        }
        rank -= c.len;
    }
    (last, rank)
}

/// Merges underfull children into a neighbour (re-splitting when the
/// merged node overflows) until none is left underfull or only one child
/// remains. Empty children are dropped.
fn fix_children<T: Copy>(children: &mut Vec<Child<T>>) {
    let mut i = 0;
    while i < children.len() {
        if children[i].node.fanout() == 0 {
            children.remove(i);
            continue;
        }
        if children.len() == 1 || !children[i].node.underfull() {
            i += 1;
            continue;
        }
        // Merge child i with its right neighbour (or child i-1 with it).
        let left = if i + 1 < children.len() { i } else { i - 1 };
        let right = children.remove(left + 1);
        let total = children[left].len + right.len;
        children[left].node.absorb(*right.node);
        if children[left].node.overfull() {
            let upper = children[left].node.split();
            if let Some(c) = Child::new(upper) {
                let upper_len = c.len;
                children.insert(left + 1, c);
                children[left].refresh(total - upper_len);
            }
        } else {
            children[left].refresh(total);
        }
        i = left;
    }
}

/// A sequence of elements kept in a B+tree with subtree sizes.
#[derive(Clone, Debug)]
pub struct Tree<T> {
    root: Node<T>,
    len: usize,
}

impl<T: Copy> Default for Tree<T> {
    fn default() -> Self {
        Tree {
            root: Node::Leaf(Vec::new()),
            len: 0,
        }
    }
}

impl<T: Copy> Tree<T> {
    pub fn new() -> Tree<T> {
        Tree::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Builds a tree from elements already in order, with nodes filled to
    /// about 7/8 (denser than inserting one by one, which leaves nodes half
    /// full after splits).
    pub fn from_sorted(items: Vec<T>) -> Tree<T> {
        let len = items.len();
        if len <= LEAF_MAX {
            return Tree {
                root: Node::Leaf(items),
                len,
            };
        }
        let mut level: Vec<Child<T>> = chunks(len, LEAF_FILL)
            .scan(items.into_iter(), |it, n| {
                let v: Vec<T> = it.by_ref().take(n).collect();
                Child::new(Node::Leaf(v))
            })
            .collect();
        while level.len() > INNER_MAX {
            let n = level.len();
            let mut it = level.into_iter();
            level = chunks(n, INNER_FILL)
                .filter_map(|k| Child::new(Node::Inner(it.by_ref().take(k).collect())))
                .collect();
        }
        Tree {
            root: Node::Inner(level),
            len,
        }
    }

    /// The element at `rank`, if `rank < len`.
    pub fn get(&self, mut rank: usize) -> Option<T> {
        if rank >= self.len {
            return None;
        }
        let mut node = &self.root;
        loop {
            match node {
                Node::Leaf(v) => return v.get(rank).copied(),
                Node::Inner(c) => {
                    let (i, r) = locate(c, rank, false);
                    rank = r;
                    node = &c[i].node;
                }
            }
        }
    }

    /// Number of leading elements for which `pred` holds, `pred` being true
    /// for a prefix of the sequence and false after it.
    pub fn partition_point(&self, mut pred: impl FnMut(T) -> bool) -> usize {
        let mut node = &self.root;
        let mut base = 0;
        loop {
            match node {
                Node::Leaf(v) => return base + v.partition_point(|&x| pred(x)),
                Node::Inner(c) => {
                    // Children whose first element satisfies the predicate:
                    // the boundary is in the last of them.
                    let k = c.partition_point(|ch| pred(ch.min));
                    if k == 0 {
                        return base;
                    }
                    base += c[..k - 1].iter().map(|ch| ch.len).sum::<usize>();
                    node = &c[k - 1].node;
                }
            }
        }
    }

    /// Inserts `x` so that it gets rank `rank` (≤ len).
    pub fn insert_at(&mut self, rank: usize, x: T) {
        let rank = rank.min(self.len);
        if let Some(upper) = insert_rec(&mut self.root, rank, x) {
            let lower = std::mem::replace(&mut self.root, Node::Leaf(Vec::new()));
            let children: Vec<Child<T>> =
                [lower, upper].into_iter().filter_map(Child::new).collect();
            self.root = Node::Inner(children);
        }
        self.len += 1;
    }

    /// Removes and returns the element at `rank`.
    pub fn remove_at(&mut self, rank: usize) -> Option<T> {
        if rank >= self.len {
            return None;
        }
        let x = remove_rec(&mut self.root, rank);
        self.len -= 1;
        self.shrink_root();
        Some(x)
    }

    /// Replaces the element at `rank` with one that sorts at the same place
    /// (a cached key changed in place).
    pub fn replace_at(&mut self, mut rank: usize, x: T) {
        if rank >= self.len {
            return;
        }
        let mut node = &mut self.root;
        loop {
            match node {
                Node::Leaf(v) => {
                    v[rank] = x;
                    return;
                }
                Node::Inner(c) => {
                    let (i, r) = locate(c, rank, false);
                    if r == 0 {
                        c[i].min = x;
                    }
                    rank = r;
                    node = &mut c[i].node;
                }
            }
        }
    }

    /// Removes ranks `lo..hi`, calling `f` on each removed element.
    pub fn remove_range(&mut self, lo: usize, hi: usize, f: &mut impl FnMut(T)) {
        let hi = hi.min(self.len);
        if lo >= hi {
            return;
        }
        remove_range_rec(&mut self.root, lo, hi, f);
        self.len -= hi - lo;
        self.shrink_root();
    }

    /// Calls `f` on every element, in order.
    pub fn for_each(&self, mut f: impl FnMut(T)) {
        self.root.for_each(&mut f);
    }

    /// Elements from rank `rank` on, ascending; or, with `rev`, from rank
    /// `rank` down to rank 0.
    pub fn iter_from(&self, rank: usize, rev: bool) -> Iter<'_, T> {
        let mut it = Iter {
            stack: SmallVec::new(),
            leaf: &[],
            pos: 0,
            rev,
            remaining: if rev {
                if rank < self.len {
                    rank + 1
                } else {
                    0
                }
            } else {
                self.len.saturating_sub(rank)
            },
        };
        if it.remaining == 0 {
            return it;
        }
        let mut node = &self.root;
        let mut r = rank;
        loop {
            match node {
                Node::Leaf(v) => {
                    it.leaf = v;
                    it.pos = r;
                    break;
                }
                Node::Inner(c) => {
                    let (i, rr) = locate(c, r, false);
                    it.stack.push((c.as_slice(), i));
                    r = rr;
                    node = &c[i].node;
                }
            }
        }
        it
    }

    /// Approximate heap bytes of the tree itself (not of what elements
    /// point to).
    pub fn heap_size(&self) -> usize {
        self.root.heap_size()
    }

    /// Collapses inner roots with a single child.
    fn shrink_root(&mut self) {
        loop {
            match &mut self.root {
                Node::Inner(c) if c.len() == 1 => {
                    if let Some(only) = c.pop() {
                        self.root = *only.node;
                    }
                }
                Node::Inner(c) if c.is_empty() => self.root = Node::Leaf(Vec::new()),
                _ => return,
            }
        }
    }
}

/// Sizes of `ceil(n / fill)` chunks as even as possible, summing to `n`.
fn chunks(n: usize, fill: usize) -> impl Iterator<Item = usize> {
    let k = n.div_ceil(fill).max(1);
    let (q, r) = (n / k, n % k);
    (0..k).map(move |i| q + usize::from(i < r))
}

/// Inserts `x` at `at` in a node's vector of at most `max` entries: a
/// full vector is split first (the upper half is returned) so that no node
/// ever allocates room beyond `max`, and growth doubles only up to `max`
/// (Vec's own doubling would leave half-empty 2*max buffers behind splits).
fn insert_capped<E>(v: &mut Vec<E>, at: usize, x: E, max: usize) -> Option<Vec<E>> {
    fn room<E>(v: &mut Vec<E>, max: usize) {
        if v.len() == v.capacity() {
            let target = (v.capacity() * 2).max(4).min(max).max(v.len() + 1);
            v.reserve_exact(target - v.len());
        }
    }
    if v.len() < max {
        room(v, max);
        v.insert(at, x);
        return None;
    }
    let mut upper = v.split_off(v.len() / 2);
    if at <= v.len() {
        room(v, max);
        v.insert(at, x);
    } else {
        room(&mut upper, max);
        upper.insert(at - v.len(), x);
    }
    Some(upper)
}

/// Inserts at `rank` below `node`; returns the new right sibling when the
/// node had to split.
fn insert_rec<T: Copy>(node: &mut Node<T>, rank: usize, x: T) -> Option<Node<T>> {
    match node {
        Node::Leaf(v) => insert_capped(v, rank, x, LEAF_MAX).map(Node::Leaf),
        Node::Inner(c) => {
            let (i, r) = locate(c, rank, true);
            let split = insert_rec(&mut c[i].node, r, x);
            let len = c[i].len + 1;
            match split.and_then(Child::new) {
                Some(upper) => {
                    c[i].refresh(len - upper.len);
                    insert_capped(c, i + 1, upper, INNER_MAX).map(Node::Inner)
                }
                None => {
                    c[i].refresh(len);
                    None
                }
            }
        }
    }
}

fn remove_rec<T: Copy>(node: &mut Node<T>, rank: usize) -> T {
    match node {
        Node::Leaf(v) => v.remove(rank),
        Node::Inner(c) => {
            let (i, r) = locate(c, rank, false);
            let x = remove_rec(&mut c[i].node, r);
            let len = c[i].len - 1;
            c[i].refresh(len);
            if c[i].node.underfull() || len == 0 {
                fix_children(c);
            }
            x
        }
    }
}

fn remove_range_rec<T: Copy>(node: &mut Node<T>, lo: usize, hi: usize, f: &mut impl FnMut(T)) {
    match node {
        Node::Leaf(v) => v.drain(lo..hi).for_each(f),
        Node::Inner(c) => {
            let mut start = 0;
            let mut i = 0;
            while i < c.len() && start < hi {
                let len = c[i].len;
                let end = start + len;
                if end <= lo {
                    start = end;
                    i += 1;
                    continue;
                }
                if lo <= start && end <= hi {
                    // The whole child goes.
                    let gone = c.remove(i);
                    gone.node.for_each(f);
                    start = end;
                    continue;
                }
                let (a, b) = (lo.max(start) - start, hi.min(end) - start);
                remove_range_rec(&mut c[i].node, a, b, f);
                c[i].refresh(len - (b - a));
                start = end;
                i += 1;
            }
            fix_children(c);
        }
    }
}

/// The inner nodes on an iterator's path, with the child taken in each;
/// four levels hold 64^4 leaves before spilling to the heap.
type Path<'a, T> = SmallVec<[(&'a [Child<T>], usize); 4]>;

/// An iterator over a [`Tree`], forwards or backwards from a rank.
pub struct Iter<'a, T> {
    stack: Path<'a, T>,
    leaf: &'a [T],
    pos: usize,
    rev: bool,
    remaining: usize,
}

impl<'a, T: Copy> Iter<'a, T> {
    /// Moves to the next (or previous) leaf.
    fn step_leaf(&mut self) -> bool {
        // Climb until a level has a sibling in the walking direction.
        loop {
            let Some((children, idx)) = self.stack.pop() else {
                return false;
            };
            let next = if self.rev {
                idx.checked_sub(1)
            } else {
                Some(idx + 1).filter(|&n| n < children.len())
            };
            if let Some(n) = next {
                self.stack.push((children, n));
                let mut node: &'a Node<T> = &children[n].node;
                loop {
                    match node {
                        Node::Leaf(v) => {
                            self.leaf = v;
                            self.pos = if self.rev {
                                v.len().saturating_sub(1)
                            } else {
                                0
                            };
                            return !v.is_empty();
                        }
                        Node::Inner(c) => {
                            let k = if self.rev { c.len() - 1 } else { 0 };
                            self.stack.push((c.as_slice(), k));
                            node = &c[k].node;
                        }
                    }
                }
            }
        }
    }
}

impl<T: Copy> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.remaining == 0 {
            return None;
        }
        if self.pos >= self.leaf.len() && !self.step_leaf() {
            self.remaining = 0;
            return None;
        }
        let x = self.leaf[self.pos];
        self.remaining -= 1;
        if self.rev {
            if self.pos == 0 {
                // Force a leaf step on the next call.
                self.pos = usize::MAX;
            } else {
                self.pos -= 1;
            }
        } else {
            self.pos += 1;
        }
        Some(x)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

#[cfg(test)]
impl<T: Copy + PartialEq + std::fmt::Debug> Tree<T> {
    /// Checks the structure: sizes, cached first elements, fill limits,
    /// even depth, no inner root with a single child.
    pub fn check(&self) {
        assert_eq!(tests::check_node(&self.root, true).0, self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn contents(t: &Tree<u32>) -> Vec<u32> {
        let mut v = Vec::new();
        t.for_each(|x| v.push(x));
        v
    }

    fn check_full(t: &Tree<u32>, model: &[u32]) {
        t.check();
        assert_eq!(t.len(), model.len());
        assert_eq!(contents(t), model);
    }

    pub(super) fn check_node<T: Copy + PartialEq + std::fmt::Debug>(
        n: &Node<T>,
        root: bool,
    ) -> (usize, usize) {
        match n {
            Node::Leaf(v) => {
                assert!(v.len() <= LEAF_MAX);
                assert!(root || !v.is_empty());
                assert!(
                    root || v.capacity() <= LEAF_MAX,
                    "leaf capacity {}",
                    v.capacity()
                );
                (v.len(), 0)
            }
            Node::Inner(c) => {
                assert!(!c.is_empty() && c.len() <= INNER_MAX);
                assert!(c.capacity() <= INNER_MAX, "inner capacity {}", c.capacity());
                assert!(!root || c.len() > 1, "inner root with one child");
                let mut total = 0;
                let mut height = None;
                for ch in c {
                    let (l, h) = check_node(&ch.node, false);
                    assert_eq!(l, ch.len);
                    assert_eq!(Some(ch.min), ch.node.min());
                    assert!(height.is_none() || height == Some(h));
                    height = Some(h);
                    total += l;
                }
                (total, height.unwrap_or(0) + 1)
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u32),
        Remove(usize),
        RemoveRange(usize, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => any::<u32>().prop_map(|x| Op::Insert(x % 5000)),
            3 => any::<usize>().prop_map(Op::Remove),
            1 => (any::<usize>(), 0usize..300).prop_map(|(a, n)| Op::RemoveRange(a, n)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Sorted insertion by partition point, removal by rank and by
        /// range, rank lookups and both iteration directions against a
        /// sorted Vec.
        #[test]
        fn tree_matches_sorted_vec(ops in proptest::collection::vec(op(), 1..3000)) {
            let mut t: Tree<u32> = Tree::new();
            let mut model: Vec<u32> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(x) => {
                        let r = t.partition_point(|y| y < x);
                        prop_assert_eq!(r, model.partition_point(|&y| y < x));
                        t.insert_at(r, x);
                        model.insert(r, x);
                    }
                    Op::Remove(i) if !model.is_empty() => {
                        let i = i % model.len();
                        prop_assert_eq!(t.remove_at(i), Some(model.remove(i)));
                    }
                    Op::RemoveRange(a, n) if !model.is_empty() => {
                        let a = a % model.len();
                        let b = (a + n).min(model.len());
                        let mut got = Vec::new();
                        t.remove_range(a, b, &mut |x| got.push(x));
                        let want: Vec<u32> = model.drain(a..b).collect();
                        got.sort_unstable();
                        prop_assert_eq!(got, want);
                    }
                    _ => {}
                }
            }
            check_full(&t, &model);
            for (i, &x) in model.iter().enumerate().step_by(7) {
                prop_assert_eq!(t.get(i), Some(x));
                let fwd: Vec<u32> = t.iter_from(i, false).take(100).collect();
                prop_assert_eq!(&fwd[..], &model[i..(i + 100).min(model.len())]);
                let rev: Vec<u32> = t.iter_from(i, true).collect();
                let mut want: Vec<u32> = model[..=i].to_vec();
                want.reverse();
                prop_assert_eq!(rev, want);
            }
            prop_assert_eq!(t.get(model.len()), None);
            prop_assert_eq!(t.iter_from(model.len(), false).count(), 0);
        }

        #[test]
        fn from_sorted_builds_a_valid_tree(n in 0usize..20000) {
            let v: Vec<u32> = (0..n as u32).collect();
            let t = Tree::from_sorted(v.clone());
            check_full(&t, &v);
            let mut t = t;
            if n > 10 {
                t.remove_range(3, n - 3, &mut |_| {});
                let mut m = v.clone();
                m.drain(3..n - 3);
                check_full(&t, &m);
            }
        }
    }
}
