// vcsim for banlieue's tests. Debian's golang-github-vmware-govmomi-dev ships govmomi's
// simulator library but no vcsim command, so the project builds this small main against
// /usr/share/gocode with Debian's Go (GOPATH mode; see tests/vsphere/CMakeLists.txt).
//
// It listens on loopback (port 0 picks a free one), serves TLS with the certificate it is
// given, requires the given login, and prints one line "url=<sdk url> pid=<pid>" on stdout
// once it accepts connections, so a test harness can wait for that line instead of sleeping.
//
// With -inventory <sdk url> it is a client instead: it logs in to that vCenter (the CA of
// -cacert, the login of -username/-password), prints one JSON object a line for every virtual
// machine and template, and exits. scripts/chaos.sh lists vcsim's own inventory this way,
// through govmomi rather than the plugin's SOAP client whose effects it checks.
//
// With -clone-seconds N, CloneVM_Task on the virtual machines and templates that exist at start
// behaves as on a real vCenter, where a clone takes minutes: the call returns its Task at once,
// queued, the VmBeingClonedEvent (destName, destFolder) is posted at once with the event chain
// the Task's info.eventChainId names, and the clone itself runs N seconds later. govmomi's
// simulator runs every task inside the request, so without this flag no clone is ever seen in
// flight; the plugin's tests of a clone whose operation token was lost need one.
//
// VirtualMachine.AcquireTicket (the WebMKS console's ticket), which govmomi's simulator does
// not implement, is answered for every virtual machine: those of the initial inventory and
// those cloned or created later. govmomi's example (simulator/example_extend_test.go) wraps a
// VM object in the registry; that cannot cover every VM here, because the simulator's own code
// asserts registry entries to *simulator.VirtualMachine (snapshot revert and removal, clone,
// resource pools), so a wrapped VM breaks the plugin's snapshot tests, and the property
// collector refuses a wrapper that embeds a pointer. So the method is answered in front of the
// SOAP endpoint instead (ticketSDK): after the same session check the simulator makes, for a
// VirtualMachine the registry holds, with a random ticket and the simulator's own host and
// port; a ticket type other than webmks or mks is InvalidArgument, as on vCenter.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// slowCloneVM is a simulator VirtualMachine whose CloneVM_Task runs later, in the background.
// It embeds the simulator's VirtualMachine by value (a copy taken at start, put in the registry
// in place of the original): the property collector finds the mo type through embedded struct
// fields, which an embedded pointer would break.
type slowCloneVM struct {
	simulator.VirtualMachine
	delay time.Duration
}

func (vm *slowCloneVM) CloneVMTask(ctx *simulator.Context, req *types.CloneVM_Task) soap.HasFault {
	folderName := req.Folder.Value
	if folder, ok := simulator.Map.Get(req.Folder).(mo.Entity); ok {
		folderName = folder.Entity().Name
	}
	started := &types.VmBeingClonedEvent{
		VmCloneEvent: types.VmCloneEvent{VmEvent: types.VmEvent{Event: types.Event{
			Vm: &types.VmEventArgument{
				EntityEventArgument: types.EntityEventArgument{Name: vm.Name},
				Vm:                  vm.Self,
			},
			FullFormattedMessage: "Cloning " + vm.Name + " to " + req.Name,
		}}},
		DestFolder: types.FolderEventArgument{
			EntityEventArgument: types.EntityEventArgument{Name: folderName},
			Folder:              req.Folder,
		},
		DestName: req.Name,
	}
	events := simulator.Map.EventManager()
	simulator.Map.WithLock(events, func() {
		events.PostEvent(ctx, &types.PostEvent{EventToPost: started})
	})
	task := simulator.CreateTask(vm, "cloneVm", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		time.Sleep(vm.delay)
		var res soap.HasFault
		simulator.Map.WithLock(vm, func() { res = vm.VirtualMachine.CloneVMTask(ctx, req) })
		body := res.(*methods.CloneVM_TaskBody)
		if body.Fault_ != nil || body.Res == nil {
			return nil, &types.SystemError{Reason: "the simulator's clone failed"}
		}
		inner := simulator.Map.Get(body.Res.Returnval).(*simulator.Task)
		if inner.Info.Error != nil {
			return nil, inner.Info.Error.Fault
		}
		return inner.Info.Result, nil
	})
	task.Info.EventChainId = started.ChainId
	task.Info.DescriptionId = "VirtualMachine.clone" // vCenter's id; the simulator says cloneVm
	go task.Run()
	return &methods.CloneVM_TaskBody{Res: &types.CloneVM_TaskResponse{Returnval: task.Self}}
}

// slowClones puts a slowCloneVM in place of every virtual machine and template there is now.
func slowClones(delay time.Duration) {
	for _, entity := range simulator.Map.All("VirtualMachine") {
		vm := entity.(*simulator.VirtualMachine)
		simulator.Map.Put(&slowCloneVM{VirtualMachine: *vm, delay: delay})
	}
}

// inventoryVM is one line of -inventory: the VM's name, its instance UUID (the plugin sets it
// to the VSphereMachine's uid), whether it is a template, its power state, and the host name
// the plugin writes into guestinfo.network.hostname (empty on the simulator's own VMs).
type inventoryVM struct {
	Name         string `json:"name"`
	InstanceUUID string `json:"instanceUuid"`
	Template     bool   `json:"template"`
	PowerState   string `json:"powerState"`
	Hostname     string `json:"hostname"`
}

func listInventory(sdk, caFile, user, pass string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := soap.ParseURL(sdk)
	if err != nil {
		return err
	}
	soapClient := soap.NewClient(u, false)
	if caFile != "" {
		if err := soapClient.SetRootCAs(caFile); err != nil {
			return err
		}
	}
	client, err := vim25.NewClient(ctx, soapClient)
	if err != nil {
		return err
	}
	sessions := session.NewManager(client)
	if err := sessions.Login(ctx, url.UserPassword(user, pass)); err != nil {
		return err
	}
	defer sessions.Logout(context.Background())
	manager := view.NewManager(client)
	v, err := manager.CreateContainerView(ctx, client.ServiceContent.RootFolder,
		[]string{"VirtualMachine"}, true)
	if err != nil {
		return err
	}
	defer v.Destroy(context.Background())
	var vms []mo.VirtualMachine
	err = v.Retrieve(ctx, []string{"VirtualMachine"},
		[]string{"name", "config.instanceUuid", "config.template", "config.extraConfig",
			"runtime.powerState"}, &vms)
	if err != nil {
		return err
	}
	lines := make([]inventoryVM, 0, len(vms))
	for _, vm := range vms {
		line := inventoryVM{Name: vm.Name, PowerState: string(vm.Runtime.PowerState)}
		if vm.Config != nil {
			line.InstanceUUID = vm.Config.InstanceUuid
			line.Template = vm.Config.Template
			// vcsim appends extraConfig entries instead of replacing them: the last one wins.
			for _, option := range vm.Config.ExtraConfig {
				if value := option.GetOptionValue(); value.Key == "guestinfo.network.hostname" {
					line.Hostname = fmt.Sprint(value.Value)
				}
			}
		}
		lines = append(lines, line)
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].Name < lines[j].Name })
	out := json.NewEncoder(os.Stdout)
	for _, line := range lines {
		if err := out.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// ticketSDK answers VirtualMachine.AcquireTicket in front of the simulator's SOAP endpoint
// (see the file comment for why not in a wrapped VM) and passes every other request on.
type ticketSDK struct {
	next http.Handler
}

// acquireTicket is the one request ticketSDK reads: <AcquireTicket><_this type=
// "VirtualMachine">vm-42</_this><ticketType>webmks</ticketType></AcquireTicket>.
type acquireTicket struct {
	Body struct {
		Req *struct {
			This       types.ManagedObjectReference `xml:"_this"`
			TicketType string                       `xml:"ticketType"`
		} `xml:"AcquireTicket"`
	} `xml:"Body"`
}

const soapEnvelope = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>%s</soapenv:Body></soapenv:Envelope>`

func escape(text string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(text))
	return b.String()
}

func soapFault(w http.ResponseWriter, fault, message, detail string) {
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	fmt.Fprintf(w, soapEnvelope, fmt.Sprintf(`<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>%s</faultstring><detail><%sFault xmlns="urn:vim25" xsi:type="%s">%s</%sFault></detail></soapenv:Fault>`,
		escape(message), fault, fault, detail, fault))
}

// authenticated asks the simulator itself whether the request's session cookie is a session:
// CurrentTime needs one, and answers a fault (NotAuthenticated) without.
func (t *ticketSDK) authenticated(r *http.Request) bool {
	probe, err := http.NewRequest(http.MethodPost, r.URL.String(), strings.NewReader(fmt.Sprintf(soapEnvelope,
		`<CurrentTime xmlns="urn:vim25"><_this type="ServiceInstance">ServiceInstance</_this></CurrentTime>`)))
	if err != nil {
		return false
	}
	probe.Header = r.Header.Clone()
	probe.Header.Del("Content-Length")
	recorder := httptest.NewRecorder()
	t.next.ServeHTTP(recorder, probe)
	return recorder.Code == http.StatusOK
}

func (t *ticketSDK) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/sdk") {
		t.next.ServeHTTP(w, r)
		return
	}
	body, err := ioutil.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var req acquireTicket
	if !bytes.Contains(body, []byte("AcquireTicket")) || xml.Unmarshal(body, &req) != nil || req.Body.Req == nil {
		r.Body = ioutil.NopCloser(bytes.NewReader(body))
		t.next.ServeHTTP(w, r)
		return
	}
	this := req.Body.Req.This
	if !t.authenticated(r) {
		soapFault(w, "NotAuthenticated", "not authenticated", "")
		return
	}
	if this.Type != "VirtualMachine" || simulator.Map.Get(this) == nil {
		soapFault(w, "ManagedObjectNotFound", "managed object not found: "+this.String(),
			fmt.Sprintf(`<obj type="%s">%s</obj>`, escape(this.Type), escape(this.Value)))
		return
	}
	kind := req.Body.Req.TicketType
	if kind != "webmks" && kind != "mks" {
		soapFault(w, "InvalidArgument", "ticketType "+kind+" is not webmks or mks",
			"<invalidProperty>ticketType</invalidProperty>")
		return
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, port = r.Host, "443"
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, soapEnvelope, fmt.Sprintf(`<AcquireTicketResponse xmlns="urn:vim25"><returnval><ticket>%s</ticket><cfgFile>[LocalDS_0] %s/%s.vmx</cfgFile><host>%s</host><port>%s</port><sslThumbprint>00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33</sslThumbprint></returnval></AcquireTicketResponse>`,
		hex.EncodeToString(secret), escape(this.Value), escape(this.Value), escape(host), escape(port)))
}

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
	inventory := flag.String("inventory", "", "list the VMs of the vCenter at this sdk URL, then exit")
	caFile := flag.String("cacert", "", "with -inventory: the CA (PEM) that signed the server's certificate")
	cloneSeconds := flag.Float64("clone-seconds", 0, "run each CloneVM_Task this many seconds after it is queued (0: at once, inside the call)")
	flag.Parse()

	if *inventory != "" {
		if err := listInventory(*inventory, *caFile, *user, *pass); err != nil {
			log.Fatal(err)
		}
		return
	}

	listenURL := &url.URL{Host: *listen}
	if *user != "" {
		listenURL.User = url.UserPassword(*user, *pass)
	}
	if err := model.Create(); err != nil {
		log.Fatal(err)
	}
	if *cloneSeconds > 0 {
		slowClones(time.Duration(*cloneSeconds * float64(time.Second)))
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
	// Before the URL is printed no client knows the address, so no request sees the swap.
	server.Config.Handler = &ticketSDK{next: server.Config.Handler}
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
