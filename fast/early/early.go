// Package early answers the plainest `orcr agent run` — no --json, no --provider —
// before even package fast's init: it imports no encoding/json (nor reflect), so it is
// ready once os, strings, strconv and sort are, while fast waits for encoding/json,
// and every package that became ready meanwhile and sorts before it ran its init
// first: 70 packages with init work before fast answered a run, 38 before early does
// (the ones left out: the FIPS crypto packages, encoding/gob, compress/flate,
// encoding/json itself). Its request and reply are written and read by hand (json.go);
// what it prints is fast's printRun, byte for byte. Any other command line returns
// from its init and fast (or the full command line) answers it.
//
// It also holds what fast and it share: the parse of the command line (Parse), the
// socket's path and the connection.
package early

import (
	"errors"
	"os"
	"path"
	"syscall"
)

// ProtocolVersion is the socket protocol's version every request carries
// (wire.Version; the cli tests check they are equal).
const ProtocolVersion = 1

func init() {
	c, ok := Parse(os.Args, os.Getenv, os.Getwd)
	if !ok || c.Run == nil || c.JSON || c.Run.Provider != "" {
		return
	}
	if code, done := AnswerRun(c.Run, os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
}

// AnswerRun makes an agent.run of p (one without a provider: no login warning to ask
// the server for) and prints the reply as the full command line does, returning the
// exit code and done. It is not done — nothing was sent or printed — when the server
// could not be reached or p cannot be written; once the request is sent, whatever
// happens is answered here.
func AnswerRun(p *RunParams, stdout, stderr *os.File) (int, bool) {
	req, ok := runRequest(p, os.Getenv("ORCR_ID"))
	if !ok {
		return 0, false
	}
	fd, err := Dial(SocketPath())
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	if err := WriteAll(fd, req); err != nil {
		// Part of it may have reached the server: say so rather than send it again.
		return Lost(stderr, err), true
	}
	cn := &Conn{FD: fd}
	line, err := cn.ReadLine()
	var v any
	if err == nil {
		v, err = parseJSON(line)
	}
	r, _ := v.(map[string]any)
	if err == nil && r == nil {
		err = errors.New("the server's reply is not an object")
	}
	if err != nil {
		return Lost(stderr, err), true
	}
	if e, ok := r["error"].(map[string]any); ok {
		// The error the full command line prints for it, with its exit code
		// (cli.ExitCode): the request is not sent twice.
		msg, _ := e["message"].(string)
		stderr.WriteString("orcr: " + msg + "\n")
		switch e["code"] {
		case "missing_program":
			return 2, true
		case "timeout":
			return 3, true
		}
		return 1, true
	}
	result, has := r["result"]
	if id, _ := r["id"].(string); id != "1" || !has {
		return Lost(stderr, errors.New("the server's reply is not the request's")), true
	}
	res, _ := result.(map[string]any)
	if res == nil && result != nil {
		return Lost(stderr, errors.New("the server's result is not an object")), true
	}
	a, _ := res["agent"].(map[string]any)
	if notes, ok := a["roleNotes"].([]any); ok {
		for _, n := range notes {
			if s, _ := n.(string); len(s) >= 9 && s[:9] == "warning: " {
				stderr.WriteString("orcr: " + s + "\n")
			}
		}
	}
	id, _ := a["id"].(string)
	p2, _ := a["path"].(string)
	state, _ := a["state"].(string)
	stdout.WriteString(id + " " + p2 + " " + state + "\n")
	return 0, true
}

// Lost is the error of a connection that failed after the request went out, as the
// socket client words it.
func Lost(stderr *os.File, err error) int {
	stderr.WriteString("orcr: connection to orcr server lost: " + err.Error() + "\n")
	return 1
}

// SocketPath is the server socket the command line dials: ORCR_SOCKET, else
// orcr.sock in the home (cli.SocketPath over config.Home: ORCR_HOME, else
// $XDG_STATE_HOME/orcr, else ~/.local/state/orcr).
func SocketPath() string {
	if s := os.Getenv("ORCR_SOCKET"); s != "" {
		return s
	}
	home := os.Getenv("ORCR_HOME")
	if home == "" {
		if x := os.Getenv("XDG_STATE_HOME"); x != "" {
			home = path.Join(x, "orcr")
		} else {
			h, _ := os.UserHomeDir()
			home = path.Join(h, ".local", "state", "orcr")
		}
	}
	return path.Join(home, "orcr.sock")
}

// Dial connects to the unix socket at path.
func Dial(path string) (int, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// WriteAll writes b to fd.
func WriteAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// Conn is the connection to the server: requests out, one reply line each back.
type Conn struct {
	FD  int
	buf []byte // read past the last line
}

// ReadLine reads the next line: the server answers each request with one line. The
// server closing first is io.EOF's words, as the socket client reports it.
func (c *Conn) ReadLine() ([]byte, error) {
	var chunk [4 << 10]byte // on the stack: most replies are one read of it
	for {
		for i, b := range c.buf {
			if b == '\n' {
				line := c.buf[: i+1 : i+1]
				c.buf = c.buf[i+1:]
				return line, nil
			}
		}
		n, err := syscall.Read(c.FD, chunk[:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, errors.New("EOF")
		}
		c.buf = append(c.buf, chunk[:n]...)
	}
}
