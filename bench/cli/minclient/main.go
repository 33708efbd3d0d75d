// Command minclient is the floor the CLI start-up benchmarks compare `orcr` with: the
// smallest Go program that does the same request, with nothing but the standard
// library. `minclient ID|PATH` dials $ORCR_HOME/orcr.sock, asks agent.get, decodes the
// reply and prints the agent's id and path; `minclient run PATH ARGV...` asks agent.run
// in the current folder and prints the new agent's id, path and state, as `orcr agent
// run PATH -- ARGV...` does.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

func main() {
	method, params := "agent.get", map[string]any{"target": ""}
	switch {
	case len(os.Args) == 2:
		params["target"] = os.Args[1]
	case len(os.Args) > 3 && os.Args[1] == "run":
		cwd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		method, params = "agent.run", map[string]any{"path": os.Args[2], "argv": os.Args[3:], "cwd": cwd}
	default:
		fmt.Fprintln(os.Stderr, "usage: minclient ID|PATH | minclient run PATH ARGV...")
		os.Exit(2)
	}
	conn, err := net.Dial("unix", filepath.Join(os.Getenv("ORCR_HOME"), "orcr.sock"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	req, _ := json.Marshal(map[string]any{"id": "1", "method": method, "params": params})
	if _, err := conn.Write(append(req, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var resp struct {
		Result struct {
			Agent struct {
				ID    string `json:"id"`
				Path  string `json:"path"`
				State string `json:"state"`
			} `json:"agent"`
		} `json:"result"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if resp.Error != nil {
		fmt.Fprintf(os.Stderr, "%s: %s\n", resp.Error.Code, resp.Error.Message)
		os.Exit(1)
	}
	a := resp.Result.Agent
	if method == "agent.run" {
		fmt.Println(a.ID, a.Path, a.State)
		return
	}
	fmt.Println(a.ID, a.Path)
}
