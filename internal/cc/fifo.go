package cc

// fifo is a queue on a slice that reuses its space.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) len() int { return len(f.items) - f.head }

func (f *fifo[T]) push(x T) {
	if f.head > 0 && f.head == len(f.items) {
		f.items, f.head = f.items[:0], 0
	}
	f.items = append(f.items, x)
}

func (f *fifo[T]) pop() (T, bool) {
	var zero T
	if f.len() == 0 {
		return zero, false
	}
	x := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	if f.head > 1024 && f.head*2 > len(f.items) {
		f.items = append(f.items[:0], f.items[f.head:]...)
		f.head = 0
	}
	return x, true
}

// take removes and returns the first item ok accepts, keeping the others
// in order.
func (f *fifo[T]) take(ok func(T) bool) (T, bool) {
	var zero T
	for i := f.head; i < len(f.items); i++ {
		if ok(f.items[i]) {
			x := f.items[i]
			copy(f.items[f.head+1:i+1], f.items[f.head:i])
			f.items[f.head] = zero
			f.head++
			return x, true
		}
	}
	return zero, false
}
