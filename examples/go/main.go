// A fenced lease from Go: the work runs under the lease's Context, which the loss cancels, and
// carries the token to the storage; a jeopardy report says when to checkpoint.
//
//	go run . [SOCKET]
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"fencekeeper"
)

func main() {
	socket := ""
	if len(os.Args) > 1 {
		socket = os.Args[1]
	}
	ctx := context.Background()
	client, err := fencekeeper.Connect(ctx, socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(69)
	}
	defer client.Close()
	lease, err := client.Lock(ctx, "examples/go", fencekeeper.WithTTL(10*time.Second),
		fencekeeper.WithWait(5*time.Second), fencekeeper.WithOwner("go-example"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(75)
	}
	defer lease.Release()
	work := lease.Context()
	select {
	case <-work.Done(): // lost before the work began
		reason, _ := lease.LossReason()
		fmt.Fprintln(os.Stderr, "lease lost:", reason)
		os.Exit(76)
	case risk := <-lease.AtRisk():
		fmt.Println("at risk, checkpointing; left:", risk.Left)
	case <-time.After(100 * time.Millisecond): // the work, with lease.Token() sent to storage
	}
	fmt.Printf("go: token %d, valid for %v\n", lease.Token(), lease.ValidFor().Round(time.Second))
}
