// Command fakeagent is a tiny stand-in for an interactive coding agent, used by tests
// across the repository for what real agent CLIs cannot do on cue: crash, hang, flood
// output, ask a question. Tests build it with testbin.Build(t, "orcr/testutil/fakeagent").
//
// It prints a prompt ("fake> ", or "NAME> " with --name) and acts on each input line:
//
//	echo TEXT      print TEXT
//	crash N        exit with code N
//	hang           stop reading input forever
//	flood N        print N numbered lines as fast as possible
//	ask QUESTION   print "QUESTION: <question>" and "[1] yes  [2] no", read one line,
//	               print "answered: <line>"
//	work SECONDS   print "working…", wait, print "done."
//	exit           exit 0
//	anything else  print "unknown: <line>"
//
// With --print-env it first prints the ORCR_* environment, sorted, one KEY=VALUE a line.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultName is the prompt's name without --name; a link-time -X sets it
// (testbin's TestBuildStamped).
var defaultName = "fake"

func main() {
	name := flag.String("name", defaultName, "name shown in the prompt")
	printEnv := flag.Bool("print-env", false, "print the ORCR_* environment at start")
	flag.Parse()
	os.Exit(run(os.Stdin, os.Stdout, *name, *printEnv))
}

// run is the agent's loop; it returns the exit code.
func run(in io.Reader, out io.Writer, name string, printEnv bool) int {
	w := bufio.NewWriter(out)
	defer w.Flush()
	if printEnv {
		var env []string
		for _, kv := range os.Environ() {
			if strings.HasPrefix(kv, "ORCR_") {
				env = append(env, kv)
			}
		}
		slices.Sort(env)
		for _, kv := range env {
			fmt.Fprintln(w, kv)
		}
	}
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64*1024), 1024*1024)
	for {
		fmt.Fprintf(w, "%s> ", name)
		w.Flush()
		if !lines.Scan() {
			fmt.Fprintln(w)
			return 0
		}
		line := strings.TrimSpace(lines.Text())
		cmd, arg, _ := strings.Cut(line, " ")
		switch cmd {
		case "":
		case "echo":
			fmt.Fprintln(w, arg)
		case "crash":
			code, err := strconv.Atoi(arg)
			if err != nil {
				code = 1
			}
			fmt.Fprintf(w, "crashing with %d\n", code)
			w.Flush()
			return code
		case "hang":
			fmt.Fprintln(w, "hanging")
			w.Flush()
			for { // never reads again; the test kills it
				time.Sleep(time.Hour)
			}
		case "flood":
			n, _ := strconv.Atoi(arg)
			for i := 1; i <= n; i++ {
				fmt.Fprintf(w, "flood line %d\n", i)
			}
			fmt.Fprintln(w, "flood done")
		case "ask":
			fmt.Fprintf(w, "QUESTION: %s\n[1] yes  [2] no\n", arg)
			w.Flush()
			if !lines.Scan() {
				return 0
			}
			fmt.Fprintf(w, "answered: %s\n", strings.TrimSpace(lines.Text()))
		case "work":
			secs, err := strconv.ParseFloat(arg, 64)
			if err != nil || secs < 0 {
				secs = 1
			}
			fmt.Fprintln(w, "working…")
			w.Flush()
			time.Sleep(time.Duration(secs * float64(time.Second)))
			fmt.Fprintln(w, "done.")
		case "exit":
			return 0
		default:
			fmt.Fprintf(w, "unknown: %s\n", line)
		}
	}
}
