package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// What a client does with the kernel's methods beyond one Call: page through agent.list,
// follow events.subscribe as a channel, and pipe a terminal through agent.attach. They
// are written once here over any Transport.

// ListPage is how many agents one answer of a paged list holds: about 1 MB of records,
// so a list of any length is answers well under the server's bounds.
const ListPage = 2000

// ListAgents lists agents a page at a time (a caller that sets Limit gets that one page).
func ListAgents(ctx context.Context, t Transport, p ListParams) ([]Agent, error) {
	var out []Agent
	err := listPages(ctx, t, p, func(r ListResult) { out = append(out, r.Agents...) })
	return out, err
}

// ListTable lists agents as display rows (the columns of `orcr agent ls`).
func ListTable(ctx context.Context, t Transport, p ListParams) (*Table, error) {
	p.Table = true
	tab := &Table{}
	err := listPages(ctx, t, p, func(r ListResult) {
		if r.Table != nil {
			tab.Columns = r.Table.Columns
			tab.Rows = append(tab.Rows, r.Table.Rows...)
		}
	})
	if err != nil {
		return nil, err
	}
	return tab, nil
}

// WholeAnswers is implemented by a transport whose answers have no size bound (the
// in-process one): a list is asked for there in one answer, since each page costs the
// server a copy and sort of every record.
type WholeAnswers interface{ WholeAnswers() bool }

func listPages(ctx context.Context, t Transport, p ListParams, take func(ListResult)) error {
	one := p.Limit > 0
	if w, ok := t.(WholeAnswers); ok && w.WholeAnswers() && !one {
		r, err := Call(ctx, t, AgentList, p)
		if err == nil {
			take(r)
		}
		return err
	}
	if !one {
		p.Limit = ListPage
	}
	for {
		r, err := Call(ctx, t, AgentList, p)
		if err != nil {
			return err
		}
		take(r)
		if one || r.Next == "" {
			return nil
		}
		if r.Next == p.After {
			return fmt.Errorf("agent.list did not move past %q; list with a glob instead", r.Next)
		}
		p.After = r.Next
	}
}

// Subscribe follows events.subscribe: stored events after p.After, then live ones, on a
// channel closed when the stream ends or ctx does.
func Subscribe(ctx context.Context, t Transport, p SubscribeParams) (<-chan Event, error) {
	_, lines, err := Open(ctx, t, EventsSubscribe, p)
	if err != nil {
		return nil, err
	}
	out := make(chan Event, 256)
	go func() {
		<-ctx.Done()
		lines.Close()
	}()
	go func() {
		defer close(out)
		defer lines.Close()
		for {
			ev, err := lines.Recv()
			if err != nil {
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Attach asks how to attach (without starting a stream).
func Attach(ctx context.Context, t Transport, p AttachParams) (AttachResult, error) {
	r, lines, err := Open(ctx, t, AgentAttach, p)
	if err != nil {
		return r, err
	}
	lines.Close()
	return r, nil
}

// Resizer is implemented by attach inputs that also report terminal size changes;
// AttachStream forwards them as resize frames.
type Resizer interface {
	Resizes() <-chan [2]int
}

// AttachStream runs a stream attach: in is sent to the pane, pane output goes to out.
// When in is a Resizer, size changes are forwarded too.
func AttachStream(ctx context.Context, t Transport, p AttachParams, in io.Reader, out io.Writer) error {
	r, lines, err := Open(ctx, t, AgentAttach, p)
	if err != nil {
		return err
	}
	defer lines.Close()
	if !r.Stream {
		return errors.New("host has a native attach command; run it instead")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		lines.Close()
	}()
	var wmu sync.Mutex
	send := func(f AttachFrame) error {
		wmu.Lock()
		defer wmu.Unlock()
		return lines.Send(f)
	}
	if rs, ok := in.(Resizer); ok {
		go func() {
			for {
				select {
				case sz := <-rs.Resizes():
					if send(AttachFrame{Cols: sz[0], Rows: sz[1]}) != nil {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				if send(AttachFrame{Data: append([]byte(nil), buf[:n]...)}) != nil {
					return
				}
			}
			if err != nil {
				cancel()
				return
			}
		}
	}()
	for {
		f, err := lines.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("attach stream: %w", err)
		}
		if len(f.Data) > 0 {
			if _, err := out.Write(f.Data); err != nil {
				return err
			}
		}
		if f.Closed {
			return nil
		}
	}
}

// CheckPing holds a server.ping answer to this client's protocol version.
func CheckPing(r PingResult, err error) (PingResult, error) {
	if err == nil && r.Version != Version {
		return r, Errorf(CodeVersionMismatch, "server speaks protocol %d, this client %d; restart the server with this binary", r.Version, Version)
	}
	return r, err
}
