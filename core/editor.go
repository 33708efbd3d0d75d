package core

import (
	"os"
	"os/exec"
)

// EditorCommand is the user's editor on file: $VISUAL, else $EDITOR (either may carry
// arguments, as in "code -w"), else vi. `orcr plan edit` and the dashboard run the
// same command; it is here because both surfaces depend on core and on nothing else
// they share.
func EditorCommand(file string) *exec.Cmd {
	ed := os.Getenv("VISUAL")
	if ed == "" {
		ed = os.Getenv("EDITOR")
	}
	if ed == "" {
		ed = "vi"
	}
	// Through the shell, so an editor setting with arguments or quotes works as in git.
	return exec.Command("/bin/sh", "-c", ed+` "$1"`, "orcr-edit", file)
}
