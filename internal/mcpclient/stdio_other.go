//go:build !unix

package mcpclient

import "os/exec"

func setGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}
