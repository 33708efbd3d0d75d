package socket

import (
	"bufio"
	"net"
	"path/filepath"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// Close ends a connection accepted while it ran. Serve added a connection to the ones
// Close ends only after accepting it: one accepted as Close swept them was left open,
// its handler read on, Close waited for it for ever, and so did the client for its
// answer (a coder's `orcr run done` and orchestrate/run's TestRunSurvivesRestarts,
// stopping its server, hung for 10 minutes under load). Here clients keep dialling,
// and hold what they dial open, while the server closes.
func TestCloseEndsConnectionsAcceptedMeanwhile(t *testing.T) {
	for i := range 200 {
		path := filepath.Join(t.TempDir(), "s.sock")
		srv, err := Listen(path, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve()
		// Serve is running once it answers (Close before Serve has started is
		// another matter: Serve's own start counts in the group Close waits on).
		first, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		_ = first.SetDeadline(time.Now().Add(wait.Scale(10 * time.Second)))
		if _, err := first.Write([]byte(`{"id":"1","method":"no.such"}` + "\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(first).ReadString('\n'); err != nil {
			t.Fatalf("round %d: no answer: %v", i, err)
		}
		first.Close()
		stop := make(chan struct{})
		dialled := make(chan struct{}, 1)
		var held []net.Conn
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c, err := net.Dial("unix", path); err == nil {
					held = append(held, c)
					select {
					case dialled <- struct{}{}:
					default:
					}
				}
			}
		}()
		<-dialled
		closed := make(chan struct{})
		go func() { srv.Close(); close(closed) }()
		if !wait.Until(10*time.Second, func() bool {
			select {
			case <-closed:
				return true
			default:
				return false
			}
		}) {
			t.Fatalf("round %d: Close did not return with clients dialling", i)
		}
		close(stop)
		<-done
		for _, c := range held {
			c.Close()
		}
	}
}
