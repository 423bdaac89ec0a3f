package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"senseboard/client"
	"senseboard/resource"
	"senseboard/wire"
)

// listPorts prints the computer's serial ports and the links to the
// pseudo-terminals of devices under the default state directory.
func listPorts(stdout, stderr io.Writer) int {
	ports, err := client.ListPorts()
	if err != nil {
		fmt.Fprintln(stderr, "wbcmd: list serial ports:", err)
	}
	for _, p := range ports {
		fmt.Fprintln(stdout, p)
	}
	links, _ := filepath.Glob(filepath.Join(wire.DefaultStateDir(), "*", "tty"))
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil {
			if _, err := os.Stat(target); err == nil {
				fmt.Fprintf(stdout, "%s (senseboard device %s)\n", l, filepath.Base(filepath.Dir(l)))
			}
		}
	}
	fmt.Fprintf(stdout, "TCP%s (the default TCP address of a senseboard device)\n", wire.DefaultAddress)
	return exitOK
}

// completionWords returns the paths and the type names to complete.
func completionWords() (paths, types []string) {
	return resourcePaths, append(resource.PrimitiveTypeNames(), recordTypes...)
}

func printCompletion(shell string, stdout, stderr io.Writer) int {
	paths, types := completionWords()
	flags := "--port --path --op --opdatatype --opdata --timeout --count --duration --compact --list-ports --completion --version --help"
	switch shell {
	case "bash":
		fmt.Fprintf(stdout, `# bash completion for wbcmd; load with: source <(wbcmd --completion bash)
_wbcmd() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    case "$prev" in
        --port) COMPREPLY=($(compgen -f -W "TCP%s" -- "$cur")); return ;;
        --path) COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;
        --op) COMPREPLY=($(compgen -W "GET PUT POST DELETE SUBSCRIBE" -- "$cur")); return ;;
        --opdatatype) COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;
        --completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")); return ;;
    esac
    COMPREPLY=($(compgen -W "%s" -- "$cur"))
}
complete -F _wbcmd wbcmd
`, wire.DefaultAddress, strings.Join(paths, " "), strings.Join(types, " "), flags)
	case "zsh":
		fmt.Fprintf(stdout, `#compdef wbcmd
# zsh completion for wbcmd; load with: source <(wbcmd --completion zsh)
_wbcmd() {
  _arguments \
    '--port[the device]:port:_files' \
    '--path[the resource]:path:(%s)' \
    '--op[the operation]:op:(GET PUT POST DELETE SUBSCRIBE)' \
    '*--opdatatype[type of the next value]:type:(%s)' \
    '*--opdata[a value]:value:' \
    '--timeout[how long to wait]:duration:' \
    '--count[notifications to wait for]:count:' \
    '--duration[how long to subscribe]:duration:' \
    '--compact[envelopes on one line]' \
    '--list-ports[list serial ports]' \
    '--completion[completion script]:shell:(bash zsh)'
}
compdef _wbcmd wbcmd
`, strings.Join(paths, " "), strings.Join(types, " "))
	default:
		fmt.Fprintf(stderr, "wbcmd: --completion %q: bash or zsh\n", shell)
		return exitUsage
	}
	return exitOK
}
