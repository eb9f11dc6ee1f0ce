// vcsim for banlieue's tests. Debian's golang-github-vmware-govmomi-dev ships govmomi's
// simulator library but no vcsim command, so the project builds this small main against
// /usr/share/gocode with Debian's Go (GOPATH mode; see tests/vsphere/CMakeLists.txt).
//
// It listens on loopback (port 0 picks a free one), serves TLS with the certificate it is
// given, requires the given login, and prints one line "url=<sdk url> pid=<pid>" on stdout
// once it accepts connections, so a test harness can wait for that line instead of sleeping.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmware/govmomi/simulator"
)

func main() {
	model := simulator.VPX()
	flag.IntVar(&model.Datacenter, "dc", model.Datacenter, "datacenters")
	flag.IntVar(&model.Cluster, "cluster", model.Cluster, "clusters per datacenter")
	flag.IntVar(&model.ClusterHost, "host", model.ClusterHost, "hosts per cluster")
	flag.IntVar(&model.Host, "standalone-host", model.Host, "standalone hosts per datacenter")
	flag.IntVar(&model.Datastore, "ds", model.Datastore, "local datastores")
	flag.IntVar(&model.Machine, "vm", model.Machine, "virtual machines per resource pool")
	flag.IntVar(&model.Pool, "pool", model.Pool, "resource pools per compute resource")
	flag.IntVar(&model.Portgroup, "pg", model.Portgroup, "distributed port groups")
	flag.IntVar(&model.Pod, "pod", model.Pod, "storage pods (datastore clusters)")
	listen := flag.String("l", "127.0.0.1:0", "listen address")
	certFile := flag.String("tlscert", "", "server certificate (PEM); empty serves plain HTTP")
	keyFile := flag.String("tlskey", "", "server key (PEM)")
	user := flag.String("username", "", "required user name")
	pass := flag.String("password", "", "required password")
	flag.BoolVar(&simulator.Trace, "trace", false, "log SOAP traffic to stderr")
	flag.Parse()

	listenURL := &url.URL{Host: *listen}
	if *user != "" {
		listenURL.User = url.UserPassword(*user, *pass)
	}
	if err := model.Create(); err != nil {
		log.Fatal(err)
	}
	model.Service.Listen = listenURL
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		model.Service.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	server := model.Service.NewServer()
	sdk := *server.URL
	sdk.User = nil
	fmt.Printf("url=%s pid=%d\n", sdk.String(), os.Getpid())
	os.Stdout.Sync()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	server.Close()
	model.Remove() // the simulator's datastores are temporary directories
}
