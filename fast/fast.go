package fast

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"syscall"

	"0orcr/fast/early"
)

// ProtocolVersion is the socket protocol's version every request carries
// (wire.Version; the cli tests check they are equal).
const ProtocolVersion = early.ProtocolVersion

// The command line as Parse reads it (package early, which answers the plainest
// agent run before this package's init).
type (
	Command    = early.Command
	GetParams  = early.GetParams
	ListParams = early.ListParams
	RunParams  = early.RunParams
)

// Parse is early.Parse.
func Parse(args []string, getenv func(string) string, getwd func() (string, error)) (Command, bool) {
	return early.Parse(args, getenv, getwd)
}

func init() {
	c, ok := Parse(os.Args, os.Getenv, os.Getwd)
	if !ok {
		return
	}
	if code, done := Answer(c, os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
}

// SocketPath is early.SocketPath.
func SocketPath() string { return early.SocketPath() }

// reply is a response line: its result, or the error the server refused with.
type reply struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Answer makes c's request and prints its result as the full command line does,
// returning the exit code and done. It is not done — nothing was printed, and the
// full command line runs and makes the request itself — when the server could not
// be reached, or when an agent.get got anything but a result it could read. An
// agent.run is never made twice: once it is sent, whatever happens is answered here.
func Answer(c Command, stdout, stderr *os.File) (int, bool) {
	if c.List != nil {
		return answerList(c, stdout)
	}
	var params any = c.Get
	if c.Run != nil {
		params = c.Run
	}
	p, err := json.Marshal(params)
	if err != nil {
		return 0, false
	}
	req, err := request("1", c.Method, p)
	if err != nil {
		return 0, false
	}
	fd, err := early.Dial(SocketPath())
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	cn := &conn{Conn: early.Conn{FD: fd}}
	if c.Run != nil && c.Run.Provider != "" {
		// The full command line's warning first (fast.LoginWarning): account.list only
		// reads, so a failure here still leaves the whole command to the full path.
		failed := false
		w := LoginWarning(c.Run.Provider, c.Run.Account, c.Run.Env, func() ([]Account, bool) {
			var res struct {
				Accounts []Account `json:"accounts"`
			}
			r, ok := cn.call("0", "account.list", nil)
			if ok && r.Error == nil && json.Unmarshal(r.Result, &res) == nil {
				return res.Accounts, true
			}
			failed = failed || !ok
			return nil, false
		})
		if failed {
			return 0, false
		}
		if w != "" {
			stderr.WriteString("orcr: warning: " + w + "\n")
		}
	}
	if err := early.WriteAll(fd, append(req, '\n')); err != nil {
		if c.Run != nil {
			// Part of it may have reached the server: say so rather than send it again.
			return lost(stderr, err), true
		}
		return 0, false
	}
	line, err := cn.ReadLine()
	var r reply
	if err == nil {
		err = json.Unmarshal(line, &r)
	}
	if c.Run == nil {
		if err != nil || r.ID != "1" || r.Error != nil || len(r.Result) == 0 {
			return 0, false
		}
		return printGet(c, r.Result, stdout)
	}
	switch {
	case err != nil:
		return lost(stderr, err), true
	case r.Error != nil:
		// The error the full command line prints for it, with its exit code
		// (cli.ExitCode): the request is not sent twice.
		stderr.WriteString("orcr: " + r.Error.Message + "\n")
		switch r.Error.Code {
		case "missing_program":
			return 2, true
		case "timeout":
			return 3, true
		}
		return 1, true
	case r.ID != "1" || len(r.Result) == 0:
		return lost(stderr, errors.New("the server's reply is not the request's")), true
	}
	return printRun(c, r.Result, stdout, stderr), true
}

// answerList prints `orcr agent ls`'s rows once every page has come; on any failure it
// prints nothing and leaves the command to the full command line (agent.list only reads).
func answerList(c Command, stdout *os.File) (int, bool) {
	fd, err := early.Dial(SocketPath())
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	cn := &conn{Conn: early.Conn{FD: fd}}
	p := *c.List
	var columns []string
	var rows [][]string
	for {
		params, err := json.Marshal(p)
		if err != nil {
			return 0, false
		}
		r, ok := cn.call("1", "agent.list", params)
		var res struct {
			Table *struct {
				Columns []string   `json:"columns"`
				Rows    [][]string `json:"rows"`
			} `json:"table"`
			Next string `json:"next"`
		}
		if !ok || r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
			return 0, false
		}
		if res.Table != nil {
			columns = res.Table.Columns
			rows = append(rows, res.Table.Rows...)
		}
		if res.Next == "" {
			break
		}
		if res.Next == p.After {
			return 0, false // the full command line says it did not move on
		}
		p.After = res.Next
	}
	WriteTable(stdout, columns, rows)
	return 0, true
}

// lost is early.Lost.
func lost(stderr *os.File, err error) int { return early.Lost(stderr, err) }

func printGet(c Command, result []byte, stdout *os.File) (int, bool) {
	if c.JSON {
		return printJSON(result, stdout)
	}
	var res struct {
		Agent *Agent `json:"agent"`
	}
	if json.Unmarshal(result, &res) != nil || res.Agent == nil || c.Explain && res.Agent.Sandbox != nil {
		return 0, false
	}
	WriteAgent(stdout, res.Agent, c.Explain)
	return 0, true
}

func printRun(c Command, result []byte, stdout, stderr *os.File) int {
	var res struct {
		Agent struct {
			ID        string   `json:"id"`
			Path      string   `json:"path"`
			State     string   `json:"state"`
			RoleNotes []string `json:"roleNotes"`
		} `json:"agent"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return lost(stderr, err)
	}
	a := res.Agent
	for _, n := range a.RoleNotes {
		if len(n) >= 9 && n[:9] == "warning: " {
			stderr.WriteString("orcr: " + n + "\n")
		}
	}
	if c.JSON {
		code, _ := printJSON(result, stdout)
		return code
	}
	stdout.WriteString(a.ID + " " + a.Path + " " + a.State + "\n")
	return 0
}

// printJSON prints a result as the full command line's --json does: the API's JSON,
// indented by two spaces, with a newline.
func printJSON(result []byte, stdout *os.File) (int, bool) {
	var b bytes.Buffer
	if json.Indent(&b, result, "", "  ") != nil {
		return 0, false
	}
	b.WriteByte('\n')
	stdout.Write(b.Bytes())
	return 0, true
}

// request is one request line's JSON, as core/socket's client writes it.
func request(id, method string, params json.RawMessage) ([]byte, error) {
	return json.Marshal(struct {
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
		Caller  string          `json:"caller,omitempty"`
		Version int             `json:"version"`
	}{id, method, params, os.Getenv("ORCR_ID"), ProtocolVersion})
}

// conn is the connection to the server: requests out, one reply line each back.
type conn struct{ early.Conn }

// call sends a request and reads its reply; ok false when either failed (the reply
// is then not known).
func (c *conn) call(id, method string, params json.RawMessage) (reply, bool) {
	var r reply
	req, err := request(id, method, params)
	if err != nil || early.WriteAll(c.FD, append(req, '\n')) != nil {
		return r, false
	}
	line, err := c.ReadLine()
	if err != nil || json.Unmarshal(line, &r) != nil || r.ID != id {
		return r, false
	}
	return r, true
}
