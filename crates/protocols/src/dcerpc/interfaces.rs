//! Names of well-known DCE/RPC interfaces and their operations, by interface UUID: the `service` and `procedure`
//! Suricata 9 writes beside each interface of an EVE `dcerpc` record (and of an `smb` record's `dcerpc` object).
//!
//! One table, `interfaces.txt`, transcribed once from Zeek's `consts.zeek` (its header names the file, the commit
//! and Zeek's licence), the source Suricata extracts its own map from, so the names are Suricata's. It is read once,
//! on first use, into a map from the UUID as [`super::log::uuid_string`] writes it.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The table, in the format its header describes.
const TABLE: &str = include_str!("interfaces.txt");

/// A known interface: its service name and the names of the operations the table knows.
#[derive(Debug)]
pub struct KnownInterface {
    /// `svcctl`, `netlogon`, `IRemUnknown2`, ...
    pub service: &'static str,
    /// Operation names by number (gaps where the source has none).
    procedures: Vec<Option<&'static str>>,
}

impl KnownInterface {
    /// The name of operation `opnum`, if the table has one.
    pub fn procedure(&self, opnum: u16) -> Option<&'static str> {
        self.procedures.get(usize::from(opnum)).copied().flatten()
    }
}

/// The interface with this UUID (lower-case, hyphenated, as [`super::log::uuid_string`] writes it), if known.
pub fn lookup(uuid: &str) -> Option<&'static KnownInterface> {
    static MAP: OnceLock<HashMap<&'static str, KnownInterface>> = OnceLock::new();
    MAP.get_or_init(|| parse(TABLE).unwrap_or_default())
        .get(uuid)
}

/// The `service` and `procedure` names Suricata 9 writes for an interface: the service when the UUID is known, the
/// procedure when `opnum` (a request's) is too.
pub fn names(uuid: &str, opnum: Option<u16>) -> (Option<&'static str>, Option<&'static str>) {
    let Some(i) = lookup(uuid) else {
        return (None, None);
    };
    (Some(i.service), opnum.and_then(|o| i.procedure(o)))
}

/// Reads the table: `Err` names the first line that does not follow the format (the unit tests hold the shipped
/// table to it; a table that failed would name nothing rather than stop a run).
fn parse(text: &'static str) -> Result<HashMap<&'static str, KnownInterface>, String> {
    let mut map: HashMap<&'static str, KnownInterface> = HashMap::new();
    let mut current: Option<&'static str> = None;
    for (n, line) in text.lines().enumerate() {
        let bad = || format!("interfaces.txt line {}: {line:?}", n + 1);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(ops) = line.strip_prefix("    ") {
            let iface = current.and_then(|u| map.get_mut(u)).ok_or_else(bad)?;
            let mut words = ops.split(' ');
            let first = words
                .next()
                .and_then(|w| w.strip_prefix("0x"))
                .and_then(|h| u16::from_str_radix(h, 16).ok())
                .ok_or_else(bad)?;
            let first = usize::from(first);
            // Numbers go up: a line starts at or past the previous line's end.
            if first < iface.procedures.len() {
                return Err(bad());
            }
            iface.procedures.resize(first, None);
            for name in words {
                if name.is_empty() {
                    return Err(bad());
                }
                iface.procedures.push(Some(name));
            }
            continue;
        }
        let (uuid, service) = line.split_once(' ').ok_or_else(bad)?;
        let well_formed = uuid.len() == 36
            && uuid.char_indices().all(|(i, c)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    c == '-'
                } else {
                    matches!(c, '0'..='9' | 'a'..='f')
                }
            });
        if !well_formed || service.is_empty() || map.contains_key(uuid) {
            return Err(bad());
        }
        map.insert(
            uuid,
            KnownInterface {
                service,
                procedures: Vec::new(),
            },
        );
        current = Some(uuid);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped table reads whole: Zeek's 81 interfaces and 1,284 operations.
    #[test]
    fn table_reads_whole() {
        let map = parse(TABLE).unwrap();
        assert_eq!(map.len(), 81);
        let ops: usize = map
            .values()
            .map(|i| i.procedures.iter().flatten().count())
            .sum();
        assert_eq!(ops, 1284);
        // Interfaces without operations in the source are known by their service alone.
        let dav = lookup("c8cb7687-e6d3-11d2-a958-00c04f682e16").unwrap();
        assert_eq!(dav.service, "DAV RPC SERVICE");
        assert_eq!(dav.procedure(0), None);
    }

    /// Operation numbers are consecutive from 0 except where Zeek's table skips or starts later, so a name left
    /// out in transcription would show as a gap; and each interface ends on the operation the source ends on.
    #[test]
    fn operations_are_where_the_source_has_them() {
        let map = parse(TABLE).unwrap();
        // (service, the numbers the source has no name for below its last one).
        let gaps: &[(&str, &[usize])] = &[
            ("srvsvc", &[0x36]),
            ("nddeapi", &[0x11]),
            ("IWbemServices", &[0, 1, 2]),
            ("IWbemLevel1Login", &[0, 1, 2]),
        ];
        for (uuid, i) in &map {
            let missing: Vec<usize> = (0..i.procedures.len())
                .filter(|&n| i.procedures[n].is_none())
                .collect();
            let want = gaps
                .iter()
                .find(|(s, _)| *s == i.service)
                .map_or(&[][..], |(_, g)| g);
            assert_eq!(missing, want, "{} {uuid}", i.service);
        }
        // The last operation of every interface that has any, as the source lists it.
        let last: &[(&str, usize, &str)] = &[
            ("svcctl", 0x36, "ScOpenServiceStatusHandle"),
            ("ITaskSchedulerService", 0x11, "SchRpcGetTaskInfo"),
            ("sasec", 0x03, "SAGetAccountInformation"),
            ("atsvc", 0x03, "NetrJobGetInfo"),
            ("idletask", 0x03, "ItSrvSetDetectionParameters"),
            ("mgmt", 0x04, "inq_princ_name"),
            ("FrsRpc", 0x0a, "FrsRpcVerifyPromotionParentEx"),
            ("IRemoteSCMActivator", 0x04, "RemoteCreateInstance"),
            ("IRemUnknown2", 0x06, "RemQueryInterface2"),
            ("lsarpc", 0x5e, "CredrBackupCredentials"),
            ("IRemoteWinspool", 0x4a, "RpcAsyncLogJobInfoForBranchOffice"),
            ("netlogon", 0x31, "NetrChainSetClientAttributes"),
            ("drsuapi", 0x18, "DRSQuerySitesByCost"),
            ("IActivation", 0x00, "RemoteActivation"),
            ("IObjectExporter", 0x05, "ServerAlive2"),
            ("epmapper", 0x08, "ept_map_auth_async"),
            ("samr", 0x45, "SamrPerformGenericOperation"),
            ("srvsvc", 0x39, "NetrShareDelEx"),
            ("winspipe", 0x13, "R_WinsDoScavengingNew"),
            ("wkssvc", 0x1f, "NetrWorkstationResetDfsCache"),
            ("dssetup", 0x0a, "DsRolerAbortDownlevelServerUpgrade"),
            ("spoolss", 0x68, "RpcReportJobProcessingProgress"),
            ("nspi", 0x09, "NspiGetProps"),
            ("exchange_mapi", 0x0e, "EcDoAsyncConnectEx"),
            ("IWbemServices", 0x19, "ExecMethodAsync"),
            ("IWbemLevel1Login", 0x06, "NTLMLogin"),
            ("dnsserver", 0x09, "DnssrvUpdateRecord2"),
            ("AudioSrv", 0x0e, "winmmGetPnpInfo"),
            ("AudioRpc", 0x42, "AudioVolumeStepDown"),
            ("browser", 0x0b, "BrowserrServerEnumEx"),
            ("ICertPassage", 0x00, "CertServerRequest"),
            ("eventlog", 0x18, "ElfrReportEventAndSourceW"),
            ("InitShutdown", 0x02, "BaseInitiateShutdownEx"),
            ("WindowsShutdown", 0x01, "WsdrAbortShutdown"),
            ("IKeySvc", 0x0d, "KeyrQueryRequestStatus"),
            ("IKeySvc2", 0x02, "KSrGetCAs"),
            ("ICertProtect", 0x00, "SSCertProtectFunction"),
            ("ICatDBSvc", 0x05, "SSCatDBRebuildDatabase"),
            ("winreg", 0x23, "BaseRegDeleteKeyEx"),
            ("BackupKey", 0x00, "bkrp_BackupKey"),
            ("RpcSrvDHCPC", 0x1a, "RpcSrvGetDhcpServicedConnections"),
            ("dhcpcsvc6", 0x03, "RpcSrvRequestParams"),
            ("lcrpc", 0x08, "RpcLicensingDeactivateCurrentPolicy"),
            ("winstation_rpc", 0x4b, "RpcWinStationOpenSessionDirectory"),
            ("ISeclogon", 0x01, "SeclCreateProcessWithLogonExW"),
            ("NsiS", 0x01, "nsi_binding_unexport"),
            ("NsiC", 0x03, "nsi_mgmt_handle_set_exp_age"),
            ("NsiM", 0x15, "nsi_mgmt_inq_set_age"),
            ("msgsvc", 0x03, "NetrMessageNameDel"),
            ("msgsvcsend", 0x00, "NetrSendMessage"),
            ("pnp", 0x4a, "PNP_DeleteServiceDevices"),
            ("lls_license", 0x01, "LlsrLicenseFree"),
            ("llsrpc", 0x59, "LlsrCloseEx"),
            ("netdfs", 0x16, "NetrDfsSetInfo2"),
            ("sfcapi", 0x07, "SfcSrv_InstallProtectedFiles"),
            ("nddeapi", 0x12, "NDdeSpecialCommand"),
        ];
        let with_ops = map.values().filter(|i| !i.procedures.is_empty()).count();
        assert_eq!(with_ops, last.len());
        for (service, opnum, name) in last {
            let i = map.values().find(|i| i.service == *service).unwrap();
            assert_eq!(i.procedures.len(), opnum + 1, "{service}");
            assert_eq!(i.procedures[*opnum], Some(*name), "{service}");
        }
    }

    /// The names suricata-verify's Suricata 9 checks expect (`dcerpc-dce-iface-01`, `dcerpc-smb-ctxid`,
    /// `dcerpc-ctxids`, `dcerpc-dce-opnum`, `dcerpc-dce-stub-data-02/04`, `dcerpc-smb-fail`), and nothing for an
    /// unknown UUID or operation.
    #[test]
    fn names_suricata_writes() {
        let name = |uuid: &str, op: u16| {
            let i = lookup(uuid).unwrap();
            (i.service, i.procedure(op))
        };
        let svcctl = "367abb81-9844-35f1-ad32-98f038001003";
        assert_eq!(name(svcctl, 0x10), ("svcctl", Some("OpenServiceW")));
        assert_eq!(name(svcctl, 0x2d), ("svcctl", Some("CreateServiceWOW64W")));
        assert_eq!(
            name("1ff70682-0a51-30e8-076d-740be8cee98b", 0),
            ("atsvc", Some("NetrJobAdd"))
        );
        assert_eq!(
            name("00000143-0000-0000-c000-000000000046", 5),
            ("IRemUnknown2", Some("RemRelease"))
        );
        assert_eq!(
            name("000001a0-0000-0000-c000-000000000046", 3),
            ("IRemoteSCMActivator", Some("RemoteGetClassObject"))
        );
        assert_eq!(
            name("afa8bd80-7d8a-11c9-bef4-08002b102989", 4),
            ("mgmt", Some("inq_princ_name"))
        );
        assert_eq!(
            name("3919286a-b10c-11d0-9ba8-00c04fd92ef5", 9),
            ("dssetup", Some("DsRolerUpgradeDownlevelServer"))
        );
        let winreg = "338cd001-2244-31f1-aaaa-900038001003";
        assert_eq!(name(winreg, 0x0f), ("winreg", Some("BaseRegOpenKey")));
        assert_eq!(name(winreg, 0x16), ("winreg", Some("BaseRegSetValue")));
        let netlogon = "12345678-1234-abcd-ef00-01234567cffb";
        assert_eq!(
            name(netlogon, 0x1e),
            ("netlogon", Some("NetrServerPasswordSet2"))
        );
        assert_eq!(
            name(netlogon, 0x04),
            ("netlogon", Some("NetrServerReqChallenge"))
        );
        assert_eq!(
            name("e3514235-4b06-11d1-ab04-00c04fc2dcd2", 0x10),
            ("drsuapi", Some("DRSDomainControllerInfo"))
        );
        // Zeek's one upper-case UUID is found in the lower case UUIDs are written in.
        assert_eq!(
            lookup("541679ab-2e5f-11d3-b34e-00104bcc4b4a").map(|i| i.service),
            Some("IWbemLoginHelper interface")
        );
        assert_eq!(name(svcctl, 0x37), ("svcctl", None));
        assert_eq!(name("4b324fc8-1670-01d3-1278-5a47bf6ee188", 0x36).1, None);
        assert!(lookup("00000000-0000-0000-0000-000000000000").is_none());
        assert!(lookup("367ABB81-9844-35F1-AD32-98F038001003").is_none());
    }

    /// Lines that break the format are refused with their number.
    #[test]
    fn malformed_tables_are_refused() {
        for bad in [
            "    0x00 Orphan",
            "367abb81-9844-35f1-ad32-98f038001003",
            "367abb81-9844-35f1-ad32-98f03800100 short",
            "367ABB81-9844-35f1-ad32-98f038001003 upper",
            "367abb81-9844-35f1-ad32-98f038001003 a\n    00 NoHexPrefix",
            "367abb81-9844-35f1-ad32-98f038001003 a\n    0x02 B C\n    0x01 Backwards",
            "367abb81-9844-35f1-ad32-98f038001003 a\n    0x00 Double  Space",
            "367abb81-9844-35f1-ad32-98f038001003 a\n367abb81-9844-35f1-ad32-98f038001003 b",
        ] {
            let text: &'static str = Box::leak(bad.to_string().into_boxed_str());
            assert!(parse(text).is_err(), "{bad:?}");
        }
    }
}
