package fencekeeper

// Against a real sidecar and ZooKeeper, which tests/python/test_go_client.py starts and names:
// FENCEKEEPER_SOCKET (the sidecar), FK_ZK_CONNECT (its ZooKeeper, for kazoo to delete a holder's
// node behind its back) and FK_ZK_PIDS (to freeze ZooKeeper). Skipped without them.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const bound = 15 * time.Second // every wait below is bounded by it

func connect(t *testing.T) *Client {
	t.Helper()
	socket := os.Getenv("FENCEKEEPER_SOCKET")
	if socket == "" {
		t.Skip("FENCEKEEPER_SOCKET is not set: run through tests/python/test_go_client.py")
	}
	c, err := Connect(context.Background(), socket)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// deleteBehindItsBack deletes the queue nodes of lock name with kazoo, as an operator would.
func deleteBehindItsBack(t *testing.T, name string) {
	t.Helper()
	script := `import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=15)
path = "/fencekeeper/locks/" + sys.argv[2]
for child in zk.get_children(path):
    zk.delete(path + "/" + child)
zk.stop(); zk.close()
`
	out, err := exec.Command("/usr/bin/python3", "-c", script, os.Getenv("FK_ZK_CONNECT"), name).CombinedOutput()
	if err != nil {
		t.Fatalf("kazoo delete: %v: %s", err, out)
	}
}

func signalZooKeeper(t *testing.T, sig syscall.Signal) {
	t.Helper()
	for _, field := range strings.Fields(os.Getenv("FK_ZK_PIDS")) {
		pid, err := strconv.Atoi(field)
		if err != nil {
			t.Fatalf("FK_ZK_PIDS: %v", err)
		}
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatalf("kill %d: %v", pid, err)
		}
	}
}

func TestLockGivesATokenAndTheNextHolderALargerOne(t *testing.T) {
	c := connect(t)
	ctx := context.Background()
	first, err := c.Lock(ctx, "go/tokens", WithTTL(10*time.Second), WithOwner("go-first"))
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if first.Token() == 0 || first.ValidFor() <= 0 {
		t.Fatalf("token %d, valid for %v", first.Token(), first.ValidFor())
	}
	info, err := c.Holder("go/tokens")
	if err != nil || !info.Held || info.Holders[0].Owner != "go-first" || info.Holders[0].Token != first.Token() {
		t.Fatalf("Holder: %+v, %v", info, err)
	}
	if _, err := c.TryLock(ctx, "go/tokens"); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("TryLock on a held lock: %v, want ErrTimedOut", err)
	}
	if err := first.Renew(0); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if first.Context().Err() == nil {
		t.Fatal("the Context of a released lease is not done")
	}
	if _, lost := first.LossReason(); lost {
		t.Fatal("a released lease says it was lost")
	}
	second, err := c.TryLock(ctx, "go/tokens")
	if err != nil {
		t.Fatalf("TryLock after release: %v", err)
	}
	defer second.Release()
	if second.Token() <= first.Token() {
		t.Fatalf("token %d after %d", second.Token(), first.Token())
	}
}

func TestErrorsAreTypedValues(t *testing.T) {
	c := connect(t)
	_, err := c.TryLock(context.Background(), "go/../bad")
	var fkErr *Error
	if !errors.Is(err, ErrInvalidName) || !errors.As(err, &fkErr) || !strings.Contains(fkErr.Message, "..") {
		t.Fatalf("bad name: %v", err)
	}
	held, err := c.Lock(context.Background(), "go/semaphore", WithPermits(2))
	if err != nil {
		t.Fatalf("Lock with permits: %v", err)
	}
	defer held.Release()
	if _, err := c.TryLock(context.Background(), "go/semaphore", WithPermits(3)); !errors.Is(err, ErrModeConflict) {
		t.Fatalf("another N: %v, want ErrModeConflict", err)
	}
}

func TestCancellingTheContextWithdrawsAWaitingLock(t *testing.T) {
	c := connect(t)
	holder, err := c.Lock(context.Background(), "go/withdraw")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer holder.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Lock(ctx, "go/withdraw"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock past its context: %v", err)
	}
	if time.Since(start) > bound {
		t.Fatal("the withdrawn Lock did not return")
	}
	info, err := c.Holder("go/withdraw")
	if err != nil || info.Waiters != 0 {
		t.Fatalf("the withdrawn request still queues: %+v, %v", info, err)
	}
}

func TestALossCancelsTheLeasesContext(t *testing.T) {
	c := connect(t)
	lease, err := c.Lock(context.Background(), "go/loss")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer lease.Release()
	deleteBehindItsBack(t, "go/loss")
	deleted := time.Now()
	select {
	case <-lease.Context().Done():
		t.Logf("the lease's Context was done %v after kazoo's delete returned", time.Since(deleted))
	case <-time.After(bound):
		t.Fatal("the lease's Context was not cancelled by the loss")
	}
	reason, lost := lease.LossReason()
	if !lost || reason != LossReleasedElsewhere {
		t.Fatalf("LossReason %v, %v", reason, lost)
	}
	if err := lease.Release(); !errors.Is(err, ErrLost) {
		t.Fatalf("Release of a lost lease: %v, want ErrLost", err)
	}
}

func TestWatchHolderAndCampaign(t *testing.T) {
	c := connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	changes, err := c.WatchHolder(ctx, "go/leader")
	if err != nil {
		t.Fatalf("WatchHolder: %v", err)
	}
	next := func(state HolderState) HolderChange {
		for change := range changes {
			if change.State == state {
				return change
			}
		}
		t.Fatalf("the watch ended before %v", state)
		return HolderChange{}
	}
	next(HolderFree)
	leader, err := c.Campaign(ctx, "go/leader", "go-node-a")
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	if held := next(HolderHeld); held.Info.Holders[0].Owner != "go-node-a" {
		t.Fatalf("leader %+v", held)
	}
	leader.Release()
	next(HolderFree)
}

// Last in the file (go test runs them in order): its aftermath (the session may expire once
// ZooKeeper thaws, losing whatever is held then) is no other test's business.
func TestAFrozenZooKeeperIsAtRiskBeforeTheLoss(t *testing.T) {
	c := connect(t)
	lease, err := c.Lock(context.Background(), "go/jeopardy")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer lease.Release()
	signalZooKeeper(t, syscall.SIGSTOP)
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			signalZooKeeper(t, syscall.SIGCONT)
		}
	}
	defer thaw()
	select {
	case risk := <-lease.AtRisk():
		if !risk.AtRisk || risk.Left <= 0 {
			t.Fatalf("first report %+v", risk)
		}
		if lease.Context().Err() != nil {
			t.Fatal("lost before it was at risk")
		}
	case <-lease.Context().Done():
		t.Fatal("lost without being at risk first")
	case <-time.After(bound):
		t.Fatal("never at risk")
	}
	select {
	case <-lease.Context().Done():
	case <-time.After(bound):
		t.Fatal("never lost")
	}
	thaw()
	// The sidecar vouches again once ZooKeeper answers: a new lease is granted.
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	again, err := c.Lock(ctx, "go/jeopardy")
	if err != nil {
		t.Fatalf("Lock after the thaw: %v", err)
	}
	again.Release()
}
