//! Several clients use one service (and so one Host) at the same time.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use accelhost::{Config, Host};
use serde_json::Value;

fn ask(stream: &mut TcpStream, reader: &mut BufReader<TcpStream>, command: &str) -> Value {
    writeln!(stream, "{command}").unwrap();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap()
}

#[test]
fn concurrent_clients_share_one_host() {
    let host = Host::builder()
        .config(Config::embedded_default())
        .cache_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("accelhost-cache"))
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || accelhost_example_service::serve(listener, host));

    let clients: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(address).unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let list = ask(&mut stream, &mut reader, "list");
                assert_eq!(list[0]["id"], "dfl/emu:dfl0");
                let mut verified = 0;
                while verified < 3 {
                    let answer = ask(&mut stream, &mut reader, "loopback dfl/emu:dfl0 65536");
                    if answer["verified"] == true {
                        verified += 1;
                    } else {
                        assert_eq!(answer["code"], "busy", "{answer}");
                    }
                }
                let bad = ask(&mut stream, &mut reader, "frobnicate");
                assert!(bad["error"].as_str().unwrap().contains("unknown command"));
                writeln!(stream, "quit").unwrap();
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
}
