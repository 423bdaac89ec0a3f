// Command senseboard runs simulated wearable sensor devices.
//
//	senseboard [run] [flags]   run a device (the default)
//	senseboard bridge [flags]  run the phone bridge alone
//	senseboard load [flags]    measure what a fleet of devices delivers
//	senseboard version         print the version (also --version)
//	senseboard help [command]  explain a command
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"senseboard/profile"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands maps subcommand names to their entry points.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"run":    runDevice,
	"bridge": runBridge,
	"load":   runLoad,
}

func run(args []string, stdout, stderr io.Writer) int {
	name := "run"
	if len(args) > 0 && !isFlag(args[0]) {
		name, args = args[0], args[1:]
	}
	if name == "run" && len(args) == 1 && (args[0] == "-version" || args[0] == "--version") {
		name = "version" // as wbcmd --version
	}
	switch name {
	case "version":
		fmt.Fprintln(stdout, "senseboard", profile.Version)
		return 0
	case "help":
		if len(args) == 0 {
			usage(stdout)
			return 0
		}
		cmd, ok := commands[args[0]]
		if !ok {
			return fail(stderr, usageError{fmt.Errorf("no command %q to help with; see senseboard help", args[0])})
		}
		return cmd([]string{"-help"}, stdout, stderr)
	}
	cmd, ok := commands[name]
	if !ok {
		return fail(stderr, usageError{fmt.Errorf("unknown command %q; see senseboard help", name)})
	}
	return cmd(args, stdout, stderr)
}

func isFlag(s string) bool { return len(s) > 0 && s[0] == '-' }

func usage(w io.Writer) {
	fmt.Fprint(w, `senseboard runs simulated wearable sensor devices.

Usage:
  senseboard [run] [flags]    run a device and serve it (the default command)
  senseboard bridge [flags]   run the phone bridge alone, for devices of other programs
  senseboard load [flags]     measure what a fleet of devices delivers to subscribers
  senseboard version          print the version (also senseboard --version)
  senseboard help run         the flags of run (help bridge and help load: of those)

With no flags, one device runs on embedded defaults: a pseudo-terminal under
the state directory, TCP on 127.0.0.1:7809 for wbcmd, and the phone bridge
with its dashboard on http://127.0.0.1:8080/.
`)
}

// parseFlags parses a command's flags, which take no arguments. -h and
// --help print the command's usage to help (stdout: asked for, it is the
// command's output); a flag that cannot be parsed is one line that points
// to the help, instead of the usage and the line again.
func parseFlags(fs *flag.FlagSet, args []string, help io.Writer) error {
	name := strings.TrimPrefix(fs.Name(), "senseboard ")
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(help)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return usageError{fmt.Errorf("%w; see senseboard help %s", err, name)}
	case fs.NArg() > 0:
		return usageError{fmt.Errorf("unexpected argument %q; see senseboard help %s", fs.Arg(0), name)}
	}
	return nil
}

// usageError is a command line that cannot be parsed: an unknown command,
// a flag that does not exist or whose value does not parse, an argument
// where none is taken.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// Exit statuses, as wbcmd's: 2 for a command line that cannot be parsed,
// as Go's flag package exits; 1 for every other error.
const (
	exitError = 1
	exitUsage = 2
)

// fail reports a command's error on one line and returns the exit status.
func fail(stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "senseboard:", err)
	if errors.As(err, new(usageError)) {
		return exitUsage
	}
	return exitError
}
