// Command senseboard runs simulated wearable sensor devices.
//
//	senseboard [run] [flags]   run a device (the default)
//	senseboard bridge [flags]  run the phone bridge alone
//	senseboard load [flags]    measure what a fleet of devices delivers
//	senseboard version         print the version
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
	switch name {
	case "version":
		fmt.Fprintln(stdout, "senseboard", profile.Version)
		return 0
	case "help":
		if len(args) > 0 {
			if cmd, ok := commands[args[0]]; ok {
				return cmd([]string{"-help"}, stdout, stderr)
			}
		}
		usage(stdout)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "senseboard: unknown command %q\n", name)
		usage(stderr)
		return 2
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
  senseboard version          print the version
  senseboard help run         the flags of run (help bridge and help load: of those)

With no flags, one device runs on embedded defaults: a pseudo-terminal under
the state directory, TCP on 127.0.0.1:7809 for wbcmd, and the phone bridge
with its dashboard on http://127.0.0.1:8080/.
`)
}

// parseFlags parses a command's flags, which take no arguments. -h prints
// the command's usage; a flag that cannot be parsed is one line that
// points to it, instead of the usage and the line again.
func parseFlags(fs *flag.FlagSet, args []string) error {
	name := strings.TrimPrefix(fs.Name(), "senseboard ")
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return fmt.Errorf("%w; see senseboard help %s", err, name)
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q; see senseboard help %s", fs.Arg(0), name)
	}
	return nil
}

// fail reports a command's error on one line and returns the exit status.
func fail(stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "senseboard:", err)
	return 1
}
