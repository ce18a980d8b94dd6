// Package fencekeeper gives Go programs fenced leases from the pod's fencekeeper sidecar, over
// libfencekeeper's C ABI (cgo; Debian's golang-go, no module from outside).
//
//	client, err := fencekeeper.Connect(ctx, "")  // $FENCEKEEPER_SOCKET or the default
//	lease, err := client.Lock(ctx, "reconcile", fencekeeper.WithTTL(30*time.Second))
//	defer lease.Release()
//	err = store.Write(lease.Context(), data, lease.Token())  // the work stops when the lease is lost
//
// Loss is fatal to the work in hand: the lease's Context is cancelled the moment the lease is
// lost (LossReason says why), and storage that checks tokens rejects what a stale holder sends.
package fencekeeper

/*
#cgo LDFLAGS: -lfencekeeper
#include <stdint.h>
#include <stdlib.h>
#include <fencekeeper.h>

extern void goLeaseLost(void* userData, uint64_t token, int reason);
extern void goLeaseRisk(void* userData, uint64_t token, int atRisk, uint32_t leftMs);
extern void goHolderChanged(void* userData, int state, fk_holder_info* info, char* detail);

// A registry id as the C library's user_data: made into a pointer on the C side, so that Go
// never turns an integer into a pointer.
static void fk_go_set_callbacks(fk_acquire_options* o, uintptr_t handle) {
  o->on_lost = (fk_lost_fn)goLeaseLost;
  o->on_risk = (fk_risk_fn)goLeaseRisk;
  o->user_data = (void*)handle;
}
static int fk_go_watch_holder(fk_client* client, const char* name, uintptr_t handle,
                              fk_holder_watch** out, fk_error* err) {
  return fk_watch_holder(client, name, (fk_holder_fn)goHolderChanged, (void*)handle, out, err);
}
*/
import "C"

import (
	"context"
	"sync"
	"time"
	"unsafe"
)

// WaitForever is WithWait's "no deadline" (what Lock does unless told otherwise).
const WaitForever = time.Duration(-1)

// LockMode says how a lease shares its lock.
type LockMode int

const (
	Exclusive LockMode = 0 // alone (kazoo's Lock and WriteLock)
	Shared    LockMode = 1 // with other shared holders, never with an exclusive one
	Permits   LockMode = 2 // one of at most N holders: a semaphore
)

type options struct {
	ttl        time.Duration
	wait       time.Duration
	owner      string
	mode       LockMode
	permits    uint32
	keepAlive  bool
	expectUID  int64
	waitIsTold bool
}

// Option configures Connect or a lock.
type Option func(*options)

// WithTTL sets the lease's TTL (default 30 s); keep-alive renews it while the process runs.
func WithTTL(ttl time.Duration) Option { return func(o *options) { o.ttl = ttl } }

// WithWait bounds how long Lock queues (0 tries once, WaitForever: until the context is done).
func WithWait(wait time.Duration) Option {
	return func(o *options) { o.wait, o.waitIsTold = wait, true }
}

// WithOwner labels the lease for holder queries (`fencectl holder`).
func WithOwner(owner string) Option { return func(o *options) { o.owner = owner } }

// WithShared makes the lease shared (a read lock).
func WithShared() Option { return func(o *options) { o.mode = Shared } }

// WithPermits makes the lease one of n permits (a semaphore).
func WithPermits(n uint32) Option { return func(o *options) { o.mode, o.permits = Permits, n } }

// WithoutKeepAlive leaves renewing to the caller (Lease.Renew).
func WithoutKeepAlive() Option { return func(o *options) { o.keepAlive = false } }

// WithExpectUID (Connect) requires the sidecar to run as uid (docs/security.md).
func WithExpectUID(uid uint32) Option { return func(o *options) { o.expectUID = int64(uid) } }

func collect(opts []Option) options {
	o := options{ttl: 30 * time.Second, wait: WaitForever, keepAlive: true, expectUID: -1}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func errorOf(err *C.fk_error) error {
	return &Error{Code: ErrorCode(err.code), Message: C.GoString(&err.message[0])}
}

// Client is one connection to the sidecar; safe for concurrent use.
type Client struct {
	mu     sync.Mutex
	c      *C.fk_client
	closed bool
}

// Connect opens a connection to the sidecar at socket ("" : $FENCEKEEPER_SOCKET, else the
// default path).
func Connect(ctx context.Context, socket string, opts ...Option) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := collect(opts)
	var co C.fk_connect_options
	C.fk_connect_options_init(&co)
	co.expect_uid = C.int64_t(o.expectUID)
	var path *C.char
	if socket != "" {
		path = C.CString(socket)
		defer C.free(unsafe.Pointer(path))
	}
	var c *C.fk_client
	var err C.fk_error
	if C.fk_connect_with(path, &co, &c, &err) != 0 {
		return nil, errorOf(&err)
	}
	return &Client{c: c}, nil
}

// Close closes the connection; leases still held on it are released.
func (cl *Client) Close() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if !cl.closed {
		cl.closed = true
		C.fk_client_close(cl.c)
	}
	return nil
}

// Connected says whether the connection to the sidecar is up (it reconnects by itself).
func (cl *Client) Connected() bool { return C.fk_client_connected(cl.c) != 0 }

// Lock queues for the lock name and returns the lease once granted. It waits until granted or
// ctx is done (WithWait bounds it too); ctx done withdraws the request, and a grant that crossed
// it is released, never left held.
func (cl *Client) Lock(ctx context.Context, name string, opts ...Option) (*Lease, error) {
	return cl.lock(ctx, name, collect(opts))
}

// TryLock is Lock that tries once: ErrTimedOut at once when someone else holds name.
func (cl *Client) TryLock(ctx context.Context, name string, opts ...Option) (*Lease, error) {
	o := collect(opts)
	o.wait = 0
	return cl.lock(ctx, name, o)
}

// Campaign stands for leadership on name as owner (an election: the queue decides, with no
// deadline) and returns the lease once this campaign leads; ctx done withdraws it.
func (cl *Client) Campaign(ctx context.Context, name, owner string, opts ...Option) (*Lease, error) {
	o := collect(opts)
	o.owner, o.wait = owner, WaitForever
	return cl.lock(ctx, name, o)
}

func millis(d time.Duration) C.uint32_t {
	if d < 0 {
		return C.FK_WAIT_FOREVER
	}
	ms := d.Milliseconds()
	if ms > 0xFFFFFFFE {
		ms = 0xFFFFFFFE
	}
	return C.uint32_t(ms)
}

func (cl *Client) lock(ctx context.Context, name string, o options) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hooks := newHooks()
	var ao C.fk_acquire_options
	C.fk_acquire_options_init(&ao)
	ao.ttl_ms = millis(o.ttl)
	ao.wait_ms = millis(o.wait)
	ao.keep_alive = 0
	if o.keepAlive {
		ao.keep_alive = 1
	}
	ao.mode = C.int(o.mode)
	ao.permits = C.uint32_t(o.permits)
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	if o.owner != "" {
		ao.owner_label = C.CString(o.owner)
		defer C.free(unsafe.Pointer(ao.owner_label))
	}
	C.fk_go_set_callbacks(&ao, C.uintptr_t(hooks.id))
	var req *C.fk_request
	var err C.fk_error
	if C.fk_acquire_start(cl.c, cName, &ao, &req, &err) != 0 {
		hooks.forget()
		return nil, errorOf(&err)
	}
	type result struct {
		lease *C.fk_lease
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var lease *C.fk_lease
		var werr C.fk_error
		if C.fk_request_wait(req, -1, &lease, &werr) != 0 {
			done <- result{nil, errorOf(&werr)}
			return
		}
		done <- result{lease, nil}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		C.fk_request_cancel(req) // the wait answers FK_ERR_CANCELLED, or the grant that crossed
		r = <-done
		if r.lease != nil {
			C.fk_lease_free(r.lease) // granted as it was cancelled: released, not left held
			r = result{nil, ctx.Err()}
		}
		if r.err != nil && ctx.Err() != nil {
			r.err = ctx.Err()
		}
	}
	C.fk_request_free(req)
	if r.err != nil {
		hooks.forget()
		return nil, r.err
	}
	return newLease(name, r.lease, hooks), nil
}

// Holder is one holder of a lock.
type Holder struct {
	Token       uint64
	Owner       string
	Since       time.Time
	ThisSidecar bool
	Mode        LockMode
	Permits     uint32
}

// HolderInfo says who holds a lock: Holders oldest first (a shared lock and a semaphore have
// several), Waiters queued behind them.
type HolderInfo struct {
	Held    bool
	Holders []Holder
	Waiters uint32
}

func holderInfoOf(info *C.fk_holder_info) HolderInfo {
	out := HolderInfo{Held: info.held != 0, Waiters: uint32(info.waiters)}
	for i := 0; i < int(info.holders_listed); i++ {
		h := &info.holders[i]
		out.Holders = append(out.Holders, Holder{
			Token:       uint64(h.token),
			Owner:       C.GoString(&h.owner_label[0]),
			Since:       time.UnixMilli(int64(h.since_unix_ms)),
			ThisSidecar: h.this_sidecar != 0,
			Mode:        LockMode(h.mode),
			Permits:     uint32(h.permits),
		})
	}
	return out
}

// Holder asks who holds the lock name (through any sidecar, or a kazoo client).
func (cl *Client) Holder(name string) (HolderInfo, error) {
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	info := (*C.fk_holder_info)(C.calloc(1, C.sizeof_fk_holder_info))
	defer C.free(unsafe.Pointer(info))
	info.size = C.sizeof_fk_holder_info
	var err C.fk_error
	if C.fk_holder(cl.c, cName, info, &err) != 0 {
		return HolderInfo{}, errorOf(&err)
	}
	return holderInfoOf(info), nil
}

// HolderState is what a holder watch reports.
type HolderState int

const (
	HolderHeld    HolderState = 0
	HolderFree    HolderState = 1
	HolderUnknown HolderState = 2 // the sidecar cannot vouch for its session, or the connection is down
)

// HolderChange is one report of a holder watch.
type HolderChange struct {
	State  HolderState
	Info   HolderInfo
	Detail string // HolderUnknown: why
}

// WatchHolder reports who holds name now, then every change, on the returned channel, until ctx
// is done (the channel is closed then). Changes may be coalesced: a slow reader sees the latest.
func (cl *Client) WatchHolder(ctx context.Context, name string) (<-chan HolderChange, error) {
	feed := &holderFeed{wake: make(chan struct{}, 1)}
	id := register(feed)
	cName := C.CString(name)
	defer C.free(unsafe.Pointer(cName))
	var watch *C.fk_holder_watch
	var err C.fk_error
	if C.fk_go_watch_holder(cl.c, cName, C.uintptr_t(id), &watch, &err) != 0 {
		registry.Delete(id)
		return nil, errorOf(&err)
	}
	out := make(chan HolderChange)
	go func() {
		defer close(out)
		defer registry.Delete(id)
		defer C.fk_holder_watch_free(watch) // no callback begins after it returns
		for {
			select {
			case <-ctx.Done():
				return
			case <-feed.wake:
			}
			for change, ok := feed.take(); ok; change, ok = feed.take() {
				select {
				case out <- change:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// The changes of one holder watch, from the client's I/O thread to the reader's goroutine: the
// latest only (a slow reader costs nothing, and sees the holder as it is now).
type holderFeed struct {
	mu      sync.Mutex
	pending []HolderChange
	wake    chan struct{}
}

func (f *holderFeed) put(c HolderChange) {
	f.mu.Lock()
	f.pending = append(f.pending[:0], c)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *holderFeed) take() (HolderChange, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pending) == 0 {
		return HolderChange{}, false
	}
	c := f.pending[0]
	f.pending = f.pending[1:]
	return c, true
}

//export goHolderChanged
func goHolderChanged(userData unsafe.Pointer, state C.int, info *C.fk_holder_info, detail *C.char) {
	feed, ok := lookup(userData).(*holderFeed)
	if !ok {
		return
	}
	feed.put(HolderChange{State: HolderState(state), Info: holderInfoOf(info), Detail: C.GoString(detail)})
}
