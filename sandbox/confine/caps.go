package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// dropCapabilities empties the calling OS thread's capability sets — bounding (when it
// may: CAP_SETPCAP), ambient, inheritable, permitted, effective — so nothing started from
// it holds one: an agent of a root server (CI, a container) runs as uid 0 with none.
// Capabilities are per thread, so the server's other threads keep theirs. With
// PR_SET_NO_NEW_PRIVS set first, an exec cannot give them back (the kernel caps a root
// exec's permitted set at the old one), the bounding set aside.
//
// Why it matters beyond hygiene: Landlock keeps a confined process out of the /proc/PID
// files of processes outside its domain (environ, maps: ptrace_may_access) only when it
// holds no capability — measured here (6.18, ABI 7): with root's capabilities a confined
// shell read the server's environ and maps, without them both were refused. And a root
// agent with CAP_SYS_MODULE could load a kernel module, which no Landlock rule stops.
func dropCapabilities() error {
	// The kernel answers EPERM for every capability when the thread lacks CAP_SETPCAP
	// (a user's server or launcher: its bounding set cannot be changed, and it has
	// nothing to gain through it under no_new_privs), before it looks at the number,
	// and EINVAL past the last one this kernel knows: the loop stops at either, so a
	// user's thread makes one call and no read of /proc/sys/kernel/cap_last_cap.
	for c := 0; c <= maxCap; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EPERM || err == unix.EINVAL {
			break
		}
		if err != nil {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset (drop all): %w", err)
	}
	return nil
}

// maxCap bounds the capability numbers tried (the kernel's last is 40 in 6.x; a
// capability set is 64 bits).
const maxCap = 63
