// Command minclient is the floor the CLI start-up benchmark compares `orcr agent get`
// with: the smallest Go program that does the same request. It dials
// $ORCR_HOME/orcr.sock, asks agent.get for its argument, decodes the reply and prints
// the agent's path, with nothing but the standard library.
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
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: minclient ID|PATH")
		os.Exit(2)
	}
	conn, err := net.Dial("unix", filepath.Join(os.Getenv("ORCR_HOME"), "orcr.sock"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	req, _ := json.Marshal(map[string]any{"id": "1", "method": "agent.get", "params": map[string]string{"target": os.Args[1]}})
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
				ID   string `json:"id"`
				Path string `json:"path"`
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
	fmt.Println(resp.Result.Agent.ID, resp.Result.Agent.Path)
}
