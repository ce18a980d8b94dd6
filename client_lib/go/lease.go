package fencekeeper

/*
#include <stdint.h>
#include <fencekeeper.h>
*/
import "C"

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Risk is a jeopardy report: AtRisk while the sidecar cannot reach ZooKeeper but the lease still
// stands (Left: how long at most, unless ZooKeeper comes back: checkpoint now), then AtRisk false
// when it came back in time. A loss needs no report here: the lease's Context says it.
type Risk struct {
	AtRisk bool
	Left   time.Duration
}

// What the C library's callbacks reach, by id, made before the lease exists.
type leaseHooks struct {
	id     uintptr
	ctx    context.Context
	cancel context.CancelFunc
	risks  chan Risk

	mu     sync.Mutex
	lost   bool
	reason LossReason
}

// The ids the C library hands back as user_data. A callback racing a release finds nothing here
// and does nothing (a cgo.Handle deleted meanwhile would panic).
var (
	registry sync.Map // id -> *leaseHooks or *holderFeed
	lastID   uint64
)

func register(v interface{}) uintptr {
	id := uintptr(atomic.AddUint64(&lastID, 1))
	registry.Store(id, v)
	return id
}

func lookup(userData unsafe.Pointer) interface{} {
	v, _ := registry.Load(uintptr(userData))
	return v
}

func newHooks() *leaseHooks {
	h := &leaseHooks{risks: make(chan Risk, 16)}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.id = register(h)
	return h
}

func (h *leaseHooks) forget() { registry.Delete(h.id) }

//export goLeaseLost
func goLeaseLost(userData unsafe.Pointer, token C.uint64_t, reason C.int) {
	h, ok := lookup(userData).(*leaseHooks)
	if !ok {
		return
	}
	h.mu.Lock()
	h.lost, h.reason = true, LossReason(reason)
	h.mu.Unlock()
	h.cancel()
}

//export goLeaseRisk
func goLeaseRisk(userData unsafe.Pointer, token C.uint64_t, atRisk C.int, leftMs C.uint32_t) {
	h, ok := lookup(userData).(*leaseHooks)
	if !ok {
		return
	}
	select { // never blocks the client's I/O thread: a reader that does not keep up misses some
	case h.risks <- Risk{AtRisk: atRisk != 0, Left: time.Duration(leftMs) * time.Millisecond}:
	default:
	}
}

// Lease is a granted lease. Release it when the work is done; its Context is done once the lease
// is lost or released.
type Lease struct {
	name  string
	token uint64
	hooks *leaseHooks

	mu sync.Mutex
	c  *C.fk_lease // nil once released
}

func newLease(name string, c *C.fk_lease, hooks *leaseHooks) *Lease {
	return &Lease{name: name, token: uint64(C.fk_lease_token(c)), hooks: hooks, c: c}
}

// Name is the lock's name.
func (l *Lease) Name() string { return l.name }

// Token is the fencing token: send it with every request to storage.
func (l *Lease) Token() uint64 { return l.token }

// Context is cancelled the moment the lease is lost (LossReason says why) or released: run the
// work the lease covers under it.
func (l *Lease) Context() context.Context { return l.hooks.ctx }

// LossReason says why the lease was lost; ok is false while it is not (and once released).
func (l *Lease) LossReason() (reason LossReason, ok bool) {
	l.hooks.mu.Lock()
	defer l.hooks.mu.Unlock()
	return l.hooks.reason, l.hooks.lost
}

// AtRisk delivers jeopardy reports (see Risk).
func (l *Lease) AtRisk() <-chan Risk { return l.hooks.risks }

// ValidFor is how long the lease is known valid from now: 0 once lost, released or past. Local
// (the sidecar's shared-memory lease table), no round trip.
func (l *Lease) ValidFor() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		return 0
	}
	return time.Duration(C.fk_lease_valid_for_ms(l.c)) * time.Millisecond
}

// Renew extends the lease to ttl from now (0: the TTL it was acquired with).
func (l *Lease) Renew(ttl time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		return &Error{Code: CodeNotHeld, Message: "not held: the lease was released"}
	}
	var err C.fk_error
	if C.fk_lease_renew(l.c, C.uint32_t(ttl.Milliseconds()), &err) != 0 {
		return errorOf(&err)
	}
	return nil
}

// Release ends the lease: the next in line gets the lock. It returns ErrLost (or ErrExpired) if
// the lease was lost meanwhile: the work was not covered to the end. Calling it again is a no-op.
func (l *Lease) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		return nil
	}
	var err C.fk_error
	var result error
	if C.fk_lease_release(l.c, &err) != 0 && ErrorCode(err.code) != CodeNotHeld {
		result = errorOf(&err)
	}
	C.fk_lease_free(l.c) // no callback begins after it returns
	l.c = nil
	l.hooks.cancel()
	l.hooks.forget()
	return result
}
